package fsm

import (
	"errors"
	"fmt"

	"github.com/opbus/opbus"
)

// Conditions callers branch on, with errors.Is. The errors that carry them
// name the machine, the object, the event and the state concerned.
var (
	// ErrNotAllowed marks an event fired in a state that is not one of its
	// sources. The state is unchanged; the error lists the events allowed
	// in the current state.
	ErrNotAllowed = errors.New("fsm: event not allowed in the current state")
	// ErrRefused marks an event refused by its guard. The state is
	// unchanged; the error wraps the guard's reason.
	ErrRefused = errors.New("fsm: event refused by its guard")
	// ErrUnknownEvent marks an event that the machine does not declare.
	ErrUnknownEvent = errors.New("fsm: unknown event")
	// ErrUnknownState marks a state found in an object's record that the
	// machine does not declare (a record written by another version of the
	// program, or edited). It is never reset silently: declare the state,
	// Retired if it is no longer used, to read and leave it.
	ErrUnknownState = errors.New("fsm: unknown state in the store")
	// ErrInTransition marks a call to [Machine.Fire] for an object whose
	// machine is already firing: from a guard or an Enter action, or from
	// another goroutine. Chain transitions by returning the next event
	// from [State.Enter] instead.
	ErrInTransition = errors.New("fsm: object already in a transition")
)

// fsmError is an error with its own message that unwraps to a condition
// (one of the sentinels above) and, if any, a cause.
type fsmError struct {
	msg   string
	kind  error
	cause error
}

func (e *fsmError) Error() string { return e.msg }

func (e *fsmError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// errorf returns an error of kind about machine m and the object key.
func (m *Machine) errorf(kind, cause error, key opbus.Key, format string, args ...any) error {
	return &fsmError{
		msg:   fmt.Sprintf("fsm: machine %q on %v: ", m.spec.Name, key) + fmt.Sprintf(format, args...),
		kind:  kind,
		cause: cause,
	}
}
