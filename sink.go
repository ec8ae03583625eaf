package opbus

import (
	"context"
	"sync/atomic"
	"time"
)

// StatusSink publishes objects' statuses: Kubernetes conditions, Juju's
// status-set, a log line. The bus calls PutStatus after a dispatch of key
// changed its overall status or any slot, and again on a later dispatch if
// a call failed. Calls for one key never overlap; calls for different keys
// may run concurrently. obj is the latest state (nil when the object is
// gone); slots is a copy the sink may keep. A cancelled ctx should abandon
// the call.
type StatusSink interface {
	PutStatus(ctx context.Context, key Key, obj map[string]any, overall Status, slots Slots) error
}

// DeleteSink is implemented by a StatusSink that must know when every
// delete handler of an object has succeeded, for example to remove a
// finalizer. The bus has then deleted the object's record.
type DeleteSink interface {
	Deleted(ctx context.Context, key Key, last map[string]any) error
}

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

// Stats counts what a Bus has done since it was created.
type Stats struct {
	Observed   uint64 // states queued by Observe and its variants
	Dispatched uint64 // states dispatched to handlers (sync and async)
	Ran        uint64 // handler runs
	Failed     uint64 // handler runs that returned an error or panicked
	Panicked   uint64 // handler runs that panicked
	Retried    uint64 // retries scheduled
	Coalesced  uint64 // backlogs coalesced
	Queued     int    // states waiting now
}

type counters struct {
	observed, dispatched, ran, failed, panicked, retried, coalesced atomic.Uint64
}
