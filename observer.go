package opbus

import "time"

// Observer receives the bus's measurements, for metrics. Its methods are
// called synchronously from the bus's goroutines, possibly concurrently:
// they must be fast and safe for concurrent use.
type Observer interface {
	// Observed is called when a state of key is queued; queued counts the
	// states waiting across all keys.
	Observed(key Key, queued int)
	// Coalesced is called when key's backlog passed its bound and was
	// coalesced to the latest state.
	Coalesced(key Key)
	// Handled is called after each handler run, with its latency and its
	// error (nil on success; a *PanicError for a panic).
	Handled(key Key, handler string, attempt int, took time.Duration, err error)
	// Retrying is called when a failed handler's object is scheduled to be
	// dispatched again.
	Retrying(key Key, after time.Duration)
}

// TimerObserver is an [Observer] that also hears of runs due to a schedule
// ([On].Every, [Event].Again). The bus checks for it with a type
// assertion, so an Observer need not implement it. Its method is called
// as the Observer's are: synchronously, possibly concurrently.
type TimerObserver interface {
	// TimerDue is called when handler is about to run on key because its
	// schedule is due, with how long after its due time the run starts
	// (late ≥ 0: waiting for a worker, for the key's other work, or for
	// the program to run at all). The retry of a failed due run is a
	// retry, not a due run: it is not reported.
	TimerDue(key Key, handler string, late time.Duration)
}
