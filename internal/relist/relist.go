// Package relist keeps the bookkeeping of a relist: after a restart, a
// source observes every object again (an informer's first list), in no
// fixed order, and some objects wait until it has ended — their owner
// decides which, and what waiting means. A Relist is the set of the
// objects waiting and whether it has ended; [Watch] ends it for a source
// that never says so, once observations stop coming.
//
// Invariants:
//   - A Relist ends once and stays ended: from then, no key waits and
//     Wait does nothing.
//   - A key waits from its Wait until its Over or the end, whichever
//     comes first; End returns each key still waiting, once, and only the
//     call that ends the relist returns any.
//   - Watch calls its end function every period until that function
//     reports the relist ended or the context ends; it reports "still"
//     only when the count did not change since the call before, and
//     "late" once the longest time since Watch began has passed.
//
// A Relist is not safe for concurrent use: its owner guards it (the bus,
// with its lock).
package relist

import (
	"context"
	"time"
)

// Relist is the state of one relist, keyed by K. The zero value is a
// relist under way with no key waiting.
type Relist[K comparable] struct {
	waits map[K]bool
	ended bool
}

// Ended reports whether the relist has ended.
func (r *Relist[K]) Ended() bool { return r.ended }

// Wait makes k wait for the end of the relist, unless it has ended.
func (r *Relist[K]) Wait(k K) {
	if r.ended {
		return
	}
	if r.waits == nil {
		r.waits = map[K]bool{}
	}
	r.waits[k] = true
}

// Waits reports whether k waits for the end of the relist.
func (r *Relist[K]) Waits(k K) bool { return r.waits[k] }

// Over notes that k waits no more.
func (r *Relist[K]) Over(k K) { delete(r.waits, k) }

// End ends the relist and returns the keys still waiting for it, in no
// particular order; nil if it had ended already.
func (r *Relist[K]) End() []K {
	if r.ended {
		return nil
	}
	r.ended = true
	keys := make([]K, 0, len(r.waits))
	for k := range r.waits {
		keys = append(keys, k)
	}
	r.waits = nil
	return keys
}

// Watch calls end every period until it reports that the relist has
// ended, or ctx ends: still reports that count, read before each call,
// gave the same number as before the previous call (nothing was observed
// for a period); late, that longest has passed since Watch began.
func Watch(ctx context.Context, period, longest time.Duration, count func() uint64, end func(still, late bool) (ended bool)) {
	t := time.NewTicker(period)
	defer t.Stop()
	deadline := time.Now().Add(longest)
	last := count()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := count()
		if end(n == last, !time.Now().Before(deadline)) {
			return
		}
		last = n
	}
}
