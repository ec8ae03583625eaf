package opbus

import (
	"fmt"
	"sync"
)

// queueViolations returns the invariants above that b breaks now; b.mu is
// held.
func (b *Bus) queueViolations() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	inBusy := map[*keyState]int{}
	for _, ks := range b.q.busy {
		inBusy[ks]++
		if !ks.busy {
			bad("1: %v is in queues.busy but not held", ks.key)
		}
	}
	inReady := map[*keyState]int{}
	for _, ks := range b.q.ready {
		inReady[ks]++
		if !ks.queuedNow {
			bad("2: %v is in queues.ready but not marked listed", ks.key)
		}
	}
	for ks, n := range inBusy {
		if n > 1 {
			bad("1: %v is in queues.busy %d times", ks.key, n)
		}
	}
	for ks, n := range inReady {
		if n > 1 {
			bad("2: %v is in queues.ready %d times", ks.key, n)
		}
	}
	queued := 0
	for key, ks := range b.q.keys {
		queued += len(ks.queue)
		if ks.busy && inBusy[ks] == 0 {
			bad("1: %v is held but not in queues.busy", key)
		}
		if ks.queuedNow && inReady[ks] == 0 {
			bad("2: %v is marked listed but not in queues.ready", key)
		}
	}
	pending := len(b.q.ready) + len(b.q.busy)
	if b.resumed == resumeListing && !b.stopping {
		pending++
	}
	if b.q.pending != pending {
		bad("3: queues.pending is %d, want %d (%d listed, %d held, listing %v, stopping %v)", b.q.pending, pending, len(b.q.ready), len(b.q.busy), b.resumed == resumeListing, b.stopping)
	}
	if b.q.queued != queued {
		bad("4: queues.queued is %d, want %d", b.q.queued, queued)
	}
	for ks := range b.lanes.flying {
		if _, parked := b.lanes.parked[ks]; !ks.busy && !parked {
			bad("5: %v has a state in flight but is neither held nor parked", ks.key)
		}
	}
	if b.lanes.handling > b.cfg.workers || b.lanes.handling < 0 {
		bad("6: %d passes hold a handler slot, of %d", b.lanes.handling, b.cfg.workers)
	}
	return out
}

// watchQueue has every bus check the queue's invariants (queueinv.go) at
// every change of its queue until the returned function is called, which
// returns the first few broken, as violations tagged keyqueue.
func watchQueue() (stop func() []string) {
	var mu sync.Mutex
	var broken []string
	checkQueue = func(b *Bus) {
		v := b.queueViolations()
		if len(v) == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, x := range v {
			if len(broken) < 5 {
				broken = append(broken, "[keyqueue] invariant "+x)
			}
		}
	}
	return func() []string {
		checkQueue = nil
		mu.Lock()
		defer mu.Unlock()
		return broken
	}
}
