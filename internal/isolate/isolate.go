// Package isolate calls user code (a handler, its filter, a collector) so
// that a panic in it does not take down the goroutine dispatching an
// object: the panic is recovered and returned, for the caller to turn into
// its own error or status.
//
// Invariants:
//   - A call that does not panic returns nil: fn's results are whatever fn
//     stored before returning.
//   - A call that panics returns the value it panicked with and the stack
//     of the panicking goroutine, taken while the panic unwinds, so the
//     frames of the panic are in it.
//   - With recovery off (Call's recovering false, an option of the bus
//     for tests) the panic goes on unchanged to the caller's caller.
package isolate

import "runtime/debug"

// Panic is a panic recovered by Call: the value and the stack.
type Panic struct {
	Value any
	Stack []byte
}

// Call runs fn; if fn panics and recovering is set, it recovers and
// returns the panic, and nil otherwise.
func Call(recovering bool, fn func()) (p *Panic) {
	if recovering {
		defer func() {
			if v := recover(); v != nil {
				p = &Panic{Value: v, Stack: debug.Stack()}
			}
		}()
	}
	fn()
	return nil
}
