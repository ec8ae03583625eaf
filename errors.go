package opbus

import (
	"errors"
	"fmt"
)

// The errors the package returns that callers may test for, with
// errors.Is for the values and errors.As for the types.

// ErrClosed is returned by calls made after Run has returned.
var ErrClosed = errors.New("opbus: bus is closed")

// ErrHalt, as the cause of Run's cancelled context (see
// [context.WithCancelCause]), stops the bus at once instead of draining
// it: running handlers' context is cancelled with that cause straight
// away, and from then on the bus writes nothing — no record, no status,
// no pending state. It is for a process that has lost its authority over
// the objects, such as a Kubernetes replica that lost its Lease: whoever
// takes over observes the objects afresh.
var ErrHalt = errors.New("opbus: halted")

// ErrNotOwned is returned, wrapped with the key, by [Bus.Observe],
// [Bus.Dispatch] and their variants for a key the bus has given up with
// [Bus.Release] and not taken on again with [Bus.Acquire]: another bus
// handles it now. An observed change of such a key still reaches the
// related views of the objects the bus owns that it relates to.
var ErrNotOwned = errors.New("opbus: key not owned by this bus")

// ErrPermanent marks an error that retrying will not fix: the handler runs
// again only when its subscribed value changes. Test with errors.Is.
var ErrPermanent = errors.New("opbus: permanent failure")

// ErrAbsent is the error, wrapped, that [Get] returns for a field that is
// missing or null: check it with errors.Is(err, opbus.ErrAbsent) to give
// an optional field its default.
var ErrAbsent = errors.New("opbus: absent field")

// ErrCorruptRecord marks a stored record that cannot be read: it does not
// decode, or has a version this package does not know. The key's handlers do
// not run until the record is repaired or deleted, since overwriting it
// would lose what it holds.
var ErrCorruptRecord = errors.New("opbus: corrupt record")

// RecordError reports a stored record that cannot be read.
type RecordError struct {
	Key Key
	Err error
}

// Error formats the error on one line.
func (e *RecordError) Error() string {
	return fmt.Sprintf("opbus: stored record of %v: %v", e.Key, e.Err)
}

// Unwrap returns the cause and [ErrCorruptRecord].
func (e *RecordError) Unwrap() []error { return []error{e.Err, ErrCorruptRecord} }

// PathError reports a field path that does not parse.
type PathError struct {
	Path   string // the input, as written
	Offset int    // byte offset in Path where the problem was found
	Err    error  // what was expected
}

// Error formats the error on one line.
func (e *PathError) Error() string {
	return fmt.Sprintf("opbus: field path %s: at offset %d: %v", e.Path, e.Offset, e.Err)
}

// Unwrap returns the underlying reason.
func (e *PathError) Unwrap() error { return e.Err }

// PanicError is a handler panic recovered by the bus, with the stack of the
// panicking goroutine.
type PanicError struct {
	Value any
	Stack []byte
}

// Error formats the error on one line.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// ValueError reports a value that is not JSON-like.
type ValueError struct {
	Path   Path // where the value is; the root path for the whole value
	Value  any
	Reason string
}

// Error formats the error on one line.
func (e *ValueError) Error() string {
	where := e.Path.String()
	if where == "" {
		where = "(root)"
	}
	return fmt.Sprintf("opbus: value at %s: %s", where, e.Reason)
}
