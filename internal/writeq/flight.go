package writeq

// Flight is one write of a key in flight: started by the pass that made
// it, finished by the goroutine that makes it, waited for by the key's
// next pass before it writes in turn.
//
// Invariant: Start is called once, before the write's goroutine starts;
// MarkFinished once, when the write returned, then Close once; Done closes
// at Close and not before; Finished is false until MarkFinished and true
// after. MarkFinished and Finished are called under the lock of the
// caller that orders them with its own state (the bus's), so that a key's
// owner sees the write either still running or returned, never between;
// Done may be used anywhere.
type Flight struct {
	done     chan struct{}
	finished bool
}

// Start marks the write in flight.
func (f *Flight) Start() { f.done = make(chan struct{}) }

// Started reports whether Start was called: the write runs on a goroutine
// of its own.
func (f *Flight) Started() bool { return f.done != nil }

// MarkFinished records that the write returned; the caller's lock is
// held. Done closes at Close, once the caller's own state says who takes
// the write's outcome in.
func (f *Flight) MarkFinished() { f.finished = true }

// Finished reports whether the write returned; the caller's lock is held.
func (f *Flight) Finished() bool { return f.finished }

// Close closes Done: whoever waits for the write may take its outcome in.
func (f *Flight) Close() { close(f.done) }

// Done is closed once the write returned and Close was called.
func (f *Flight) Done() <-chan struct{} { return f.done }

// Wait waits for Done.
func (f *Flight) Wait() { <-f.done }
