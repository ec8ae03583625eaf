package keyqueue

import "time"

// Clock arms the queue's retry timers: the caller's clock, so that a test
// can move time by hand.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// the returned timer is stopped first; as time.AfterFunc.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer armed by Clock.AfterFunc.
type Timer interface {
	// Stop prevents the call, reporting whether it did.
	Stop() bool
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// RetryAt arms k's retry timer for t, replacing a later one, and returns
// the delay it armed and true; with an earlier one armed, it leaves it
// (it re-arms for the rest) and returns false. When the timer fires the
// retry is due and k listed. While draining (or halted), nothing is
// armed: the retry is due at once, to be saved with the items, and
// RetryAt returns false.
func (q *Queue[K, T]) RetryAt(k K, t time.Time) (time.Duration, bool) {
	e := q.get(k)
	if q.draining {
		e.due = true
		return 0, false
	}
	if e.timer != nil {
		if !e.timerAt.After(t) {
			return 0, false
		}
		e.timer.Stop()
	}
	d := max(t.Sub(q.opt.Clock.Now()), 0)
	q.timerSeq++
	seq := q.timerSeq
	e.timerSeq, e.timerAt = seq, t
	e.timer = q.opt.Clock.AfterFunc(d, func() { q.fire(k, seq) })
	return d, true
}

// fire makes k's retry due, if seq is still its timer.
func (q *Queue[K, T]) fire(k K, seq uint64) {
	q.opt.Lock.Lock()
	defer q.opt.Lock.Unlock()
	e := q.keys[k]
	if e == nil || e.timerSeq != seq || e.timer == nil {
		return // stopped or replaced
	}
	e.timer, e.timerSeq = nil, 0
	e.due = true
	q.List(k)
}

// StopRetry disarms k's retry timer and forgets a due retry.
func (q *Queue[K, T]) StopRetry(k K) {
	e := q.keys[k]
	if e == nil {
		return
	}
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.timerSeq, e.due = 0, false
	q.tidy(k, e)
}

// Armed reports whether k's retry timer is armed.
func (q *Queue[K, T]) Armed(k K) bool {
	e := q.keys[k]
	return e != nil && e.timer != nil
}

// Due reports whether a retry of k is due.
func (q *Queue[K, T]) Due(k K) bool {
	e := q.keys[k]
	return e != nil && e.due
}

// SetDue makes a retry of k due now (a timer of the caller's fired) and
// lists k; while draining, the retry is due but k is not listed.
func (q *Queue[K, T]) SetDue(k K) {
	e := q.get(k)
	e.due = true
	q.List(k)
}

// TakeRetry takes k's retry for its holder: it is due no more, and k's
// items move again (Block ends). It reports whether one was due.
func (q *Queue[K, T]) TakeRetry(k K) bool {
	e := q.keys[k]
	if e == nil {
		return false
	}
	was := e.due
	e.due, e.blocked = false, false
	q.tidy(k, e)
	return was
}
