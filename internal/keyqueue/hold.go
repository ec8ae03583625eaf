package keyqueue

import (
	"context"
	"fmt"
	"slices"
)

// List puts k on the ready list if it has work and is neither held (or
// is held but handed over, Options.HandOver) nor listed, and keeps the
// pending count.
func (q *Queue[K, T]) List(k K) {
	if e := q.keys[k]; e != nil && e.hasWork() && !e.listed && (!e.held || (q.opt.HandOver != nil && q.opt.HandOver(k))) {
		e.listed = true
		q.ready = append(q.ready, k)
		if q.readied != nil {
			close(q.readied)
			q.readied = nil
		}
		q.Notify() // a caller in Await waits for the head of k's queue to change
		if q.opt.Listed != nil {
			q.opt.Listed(k)
		}
	}
	q.recount()
}

// Next pops the first listed key, which may since have lost its work,
// been held, or be awaited: the caller checks. None is popped while
// draining.
func (q *Queue[K, T]) Next() (K, bool) {
	var zero K
	if len(q.ready) == 0 || q.draining {
		return zero, false
	}
	k := q.ready[0]
	q.ready[0] = zero
	q.ready = q.ready[1:]
	if e := q.keys[k]; e != nil {
		e.listed = false
		q.tidy(k, e)
	}
	q.recount()
	return k, true
}

// Listed returns the number of listed keys.
func (q *Queue[K, T]) Listed() int { return len(q.ready) }

// Hold makes the caller the holder of k. It panics if k is held: a
// holder is the only one (invariant 1).
func (q *Queue[K, T]) Hold(k K) {
	e := q.get(k)
	if e.held {
		panic(fmt.Sprintf("keyqueue: Hold of %v, which is held", k))
	}
	e.held = true
	q.held = append(q.held, k)
	q.recount()
}

// Release ends the hold on k, listing k again if it has work, and wakes
// the callers waiting for a change. It panics if k is not held.
func (q *Queue[K, T]) Release(k K) {
	e := q.keys[k]
	if e == nil || !e.held {
		panic(fmt.Sprintf("keyqueue: Release of %v, which is not held", k))
	}
	e.held = false
	i := slices.Index(q.held, k)
	var zero K
	q.held[i] = q.held[len(q.held)-1]
	q.held[len(q.held)-1] = zero
	q.held = q.held[:len(q.held)-1]
	q.tidy(k, e)
	q.List(k)
	q.Notify()
}

// Held reports whether k is held.
func (q *Queue[K, T]) Held(k K) bool {
	e := q.keys[k]
	return e != nil && e.held
}

// HeldKeys returns a copy of the held keys, in no order.
func (q *Queue[K, T]) HeldKeys() []K { return slices.Clone(q.held) }

// NumHeld returns the number of held keys.
func (q *Queue[K, T]) NumHeld() int { return len(q.held) }

// Outside counts, or stops counting, one unit of pending work that the
// queue cannot see (such as a listing of stored items under way), so that
// Idle waits for it too.
func (q *Queue[K, T]) Outside(on bool) {
	q.outside = on
	q.recount()
}

// Pending returns the number of listed and held keys, plus one while
// Outside counts.
func (q *Queue[K, T]) Pending() int { return q.pending }

// recount recounts the pending keys and closes Idle's channel at zero.
func (q *Queue[K, T]) recount() {
	q.pending = len(q.ready) + len(q.held)
	if q.outside {
		q.pending++
	}
	if q.pending == 0 && q.idle != nil {
		close(q.idle)
		q.idle = nil
	}
	if q.opt.Changed != nil {
		q.opt.Changed()
	}
}

// Idle returns a channel closed once nothing is pending: at once if
// nothing is now.
func (q *Queue[K, T]) Idle() <-chan struct{} {
	if q.pending == 0 {
		return closed
	}
	if q.idle == nil {
		q.idle = make(chan struct{})
	}
	return q.idle
}

// Readied returns a channel closed when a key is next listed.
func (q *Queue[K, T]) Readied() <-chan struct{} {
	if q.readied == nil {
		q.readied = make(chan struct{})
	}
	return q.readied
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Notify wakes every caller waiting in WaitChange or Await: something
// they may wait for has changed.
func (q *Queue[K, T]) Notify() {
	if q.changed != nil {
		close(q.changed)
		q.changed = nil
	}
}

// WaitChange releases the lock until the next Notify (every Release,
// List, Drain and Halt notifies) or the end of ctx, whose error it
// returns; it holds the lock again on return. Taking the channel under
// the lock that changes are made under means no change is missed.
func (q *Queue[K, T]) WaitChange(ctx context.Context) error {
	if q.changed == nil {
		q.changed = make(chan struct{})
	}
	ch := q.changed
	q.opt.Lock.Unlock()
	defer q.opt.Lock.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Awaited reports whether a caller waits in Await for k.
func (q *Queue[K, T]) Awaited(k K) bool {
	e := q.keys[k]
	return e != nil && e.awaiting > 0
}

// Awaiting returns the number of callers waiting in Await for k.
func (q *Queue[K, T]) Awaiting(k K) int {
	if e := q.keys[k]; e != nil {
		return e.awaiting
	}
	return 0
}

// Await waits until k is not held and its next item is not awaited by
// another caller, then makes the caller, whose item is seq, the holder
// of k. Meanwhile k is awaited: a caller of Next should leave it alone
// (the queue does not: see Awaited). If ctx ends first, it returns an
// error wrapping ctx's, its item left queued for any holder; if the queue
// drains or halts first, an error wrapping ErrDraining, its item left
// queued. The lock is released while it waits.
func (q *Queue[K, T]) Await(ctx context.Context, k K, seq uint64) error {
	for {
		if q.draining {
			q.Disown(k, seq)
			return ErrDraining
		}
		if !q.Held(k) && !q.AwaitedByOther(k, seq) {
			break
		}
		e := q.get(k)
		e.awaiting++
		err := q.WaitChange(ctx)
		e.awaiting--
		if err != nil {
			q.Disown(k, seq)
			q.tidy(k, e)
			q.List(k) // no caller waits for it now: another holder takes it
			return err
		}
	}
	q.Hold(k)
	return nil
}

// Drain stops the queue normally: nothing is popped (Next) or handed
// over (Await) any more; armed retries are stopped and made due, to be
// found by Due with the items; waiters wake. Holders finish and Release.
func (q *Queue[K, T]) Drain() { q.stop(true) }

// Halt stops the queue at once: as Drain, but armed retries are dropped
// (a key whose retry was armed has none due).
func (q *Queue[K, T]) Halt() {
	q.halted = true
	q.stop(false)
}

func (q *Queue[K, T]) stop(keepRetries bool) {
	q.draining = true
	for k, e := range q.keys {
		if e.timer != nil {
			e.timer.Stop()
			e.timer, e.timerSeq = nil, 0
			e.due = keepRetries // at a halt, the retry armed is dropped
			q.tidy(k, e)
		}
	}
	q.recount()
	q.Notify()
}

// Draining reports whether Drain or Halt was called.
func (q *Queue[K, T]) Draining() bool { return q.draining }

// Halted reports whether Halt was called.
func (q *Queue[K, T]) Halted() bool { return q.halted }
