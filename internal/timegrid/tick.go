package timegrid

import "time"

// Stopper is an armed timer: Stop prevents its call, reporting whether it
// did, as time.Timer.Stop.
type Stopper interface {
	Stop() bool
}

// A Tick is the one timer armed for the schedules of one object: for the
// earliest of their due times. It is replaced only when that time
// changes, so that an object's passes, which each look at its schedules,
// do not rearm it each time.
type Tick struct {
	at    time.Time
	timer Stopper
}

// At returns the due time t is armed for.
func (t *Tick) At() time.Time { return t.at }

// Rearm returns t if it is armed for at already. Otherwise it stops t (nil
// for none) and returns a new Tick for at, whose timer arm arms: arm is
// given the new Tick, so that the timer's call can tell whether its Tick
// is still the one in place.
func Rearm(t *Tick, at time.Time, arm func(*Tick) Stopper) *Tick {
	if t != nil && t.at.Equal(at) {
		return t
	}
	t.Stop()
	n := &Tick{at: at}
	n.timer = arm(n)
	return n
}

// Stop stops t's timer; a nil t does nothing.
func (t *Tick) Stop() {
	if t != nil && t.timer != nil {
		t.timer.Stop()
	}
}

// Earliest returns the earliest due time of the schedules in l, the zero
// time for none. checked, unless zero, is when a pass of their object
// looked at them: a schedule due by then that is still due did not run in
// it (its handler's value changed and is failing, or a filter turned the
// run down), so it is first noted as tried at checked, and is next due at
// its next due time. One that came due only after checked is due at once.
func Earliest(l []*Schedule, checked time.Time) time.Time {
	var at time.Time
	for _, s := range l {
		if !checked.IsZero() && !s.Next().After(checked) {
			s.Tried(checked)
		}
		if n := s.Next(); at.IsZero() || n.Before(at) {
			at = n
		}
	}
	return at
}
