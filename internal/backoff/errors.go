package backoff

import (
	"errors"
	"fmt"
	"time"
)

// permanentError is an error that retrying will not fix: it wraps the
// handler's error and the bus's sentinel that marks such errors.
type permanentError struct{ err, mark error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() []error { return []error{e.err, e.mark} }

// Permanent wraps err so that errors.Is(err, mark) holds while its text
// stays err's; Permanent(nil, mark) is nil.
func Permanent(err, mark error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err, mark}
}

// afterError is a failure that asks for its next attempt after delay
// instead of the policy's.
type afterError struct {
	err   error
	delay time.Duration
}

func (e *afterError) Error() string {
	return fmt.Sprintf("%v (retry after %v)", e.err, e.delay)
}
func (e *afterError) Unwrap() error { return e.err }

// After returns err asking for the next attempt after d; a nil err reads
// as "not done yet".
func After(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("not done yet")
	}
	return &afterError{err: err, delay: d}
}

// Asked returns the delay an error made by After asks for, if err is or
// wraps one.
func Asked(err error) (time.Duration, bool) {
	var ra *afterError
	if errors.As(err, &ra) {
		return ra.delay, true
	}
	return 0, false
}
