package record

import "time"

// Failure is a handler's failure on one value: how many attempts failed,
// when the next is due, or that it failed for good.
type Failure[D ~[16]byte] struct {
	On        D
	N         int
	At        time.Time // next attempt; zero: at the next pass
	Permanent bool
}

// FailureOn returns the failure of handler id on the value d; nil if the
// handler is not failing, or failing on another value (which a change of
// value ends).
func (r *Record[D, S, T]) FailureOn(id string, d D) *Failure[D] {
	if f := r.Fails[id]; f != nil && f.On == d {
		return f
	}
	return nil
}

// Attempt returns the number of the next attempt of handler id on the
// value d: 1, or one more than the attempts that failed on d.
func (r *Record[D, S, T]) Attempt(id string, d D) int {
	if f := r.FailureOn(id, d); f != nil {
		return f.N + 1
	}
	return 1
}

// Fail counts a failed attempt of handler id on the value d and returns
// its failure, for the caller to say when the next attempt is due or that
// there is none: a failure on another value starts again from one.
func (r *Record[D, S, T]) Fail(id string, d D) *Failure[D] {
	f := r.FailureOn(id, d)
	if f == nil {
		f = &Failure[D]{On: d}
		if r.Fails == nil {
			r.Fails = map[string]*Failure[D]{}
		}
		r.Fails[id] = f
	}
	f.N++
	return f
}

// NextAttempt returns when the earliest failure to be tried again at a
// time is due: of the failures not for good, the earliest At that is set;
// the zero time if none is.
func (r *Record[D, S, T]) NextAttempt() time.Time {
	var due time.Time
	for _, f := range r.Fails {
		if !f.Permanent && !f.At.IsZero() && (due.IsZero() || f.At.Before(due)) {
			due = f.At
		}
	}
	return due
}
