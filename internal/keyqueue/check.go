package keyqueue

import (
	"errors"
	"fmt"
)

// Check reports the invariants (see the package documentation) that the
// queue breaks now, joined, or nil; the lock is held. It costs a walk of
// every key: for tests.
func (q *Queue[K, T]) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	inHeld := map[K]int{}
	for _, k := range q.held {
		if inHeld[k]++; inHeld[k] == 2 {
			bad("1: %v is in the held set twice", k)
		}
		if e := q.keys[k]; e == nil || !e.held {
			bad("1: %v is in the held set but not marked held", k)
		}
	}
	inReady := map[K]int{}
	for _, k := range q.ready {
		if inReady[k]++; inReady[k] == 2 {
			bad("2: %v is on the ready list twice", k)
		}
		if e := q.keys[k]; e == nil || !e.listed {
			bad("2: %v is on the ready list but not marked listed", k)
		}
	}
	pending := len(q.ready) + len(q.held)
	if q.outside {
		pending++
	}
	if q.pending != pending {
		bad("3: pending is %d, want %d (%d listed, %d held, outside %v)", q.pending, pending, len(q.ready), len(q.held), q.outside)
	}
	queued := 0
	for k, e := range q.keys {
		queued += len(e.items)
		q.checkKey(k, e, inHeld[k], inReady[k], bad)
	}
	if q.queued != queued {
		bad("4: Len is %d, but %d items are queued", q.queued, queued)
	}
	return errors.Join(errs...)
}

// checkKey checks the invariants of one key's entry.
func (q *Queue[K, T]) checkKey(k K, e *entry[T], held, listed int, bad func(string, ...any)) {
	if e.held && held == 0 {
		bad("1: %v is marked held but not in the held set", k)
	}
	if e.listed && listed == 0 {
		bad("2: %v is marked listed but not on the ready list", k)
	}
	var last uint64
	for i := range e.items {
		seq := q.opt.Tag(&e.items[i]).Seq
		if seq == 0 {
			continue // made by the caller (PushFront)
		}
		if seq <= last || seq > q.seq {
			bad("4: %v has item %d after item %d (the last number given is %d)", k, seq, last, q.seq)
		}
		last = seq
	}
	if (e.timer == nil) != (e.timerSeq == 0) || e.timerSeq > q.timerSeq {
		bad("5: %v has timer %d armed %v (the last armed is %d)", k, e.timerSeq, e.timer != nil, q.timerSeq)
	}
	if e.timer != nil && q.draining {
		bad("5: %v has an armed timer after Drain or Halt", k)
	}
	if e.awaiting < 0 {
		bad("6: %v is awaited by %d callers", k, e.awaiting)
	}
	if e.empty() {
		bad("7: %v is kept with nothing in it", k)
	}
}
