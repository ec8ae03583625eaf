package opbus

import (
	"fmt"
	"strings"
	"sync"
)

// queueViolations returns the invariants above, and the keyqueue's, that
// b breaks now; b.mu is held.
func (b *Bus) queueViolations() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	kq := b.q.kq
	if err := kq.Check(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			bad("keyqueue %s", line)
		}
	}
	if kq.Draining() && !b.stopping {
		bad("2: the keyqueue drains but the bus is not stopping")
	}
	outside := 0
	if b.resumed.UnderWay() && !b.stopping {
		outside = 1
	}
	if got := kq.Pending() - kq.Listed() - kq.NumHeld(); got != outside {
		bad("3: the keyqueue counts %d outside, want %d (listing %v, stopping %v)", got, outside, b.resumed.UnderWay(), b.stopping)
	}
	for _, ks := range kq.Keys() {
		if kq.KeyLen(ks) > 0 && b.q.keys[ks.key] != ks {
			bad("4: %v has %d states queued but is forgotten", ks.key, kq.KeyLen(ks))
		}
	}
	for ks := range b.lanes.flying {
		if !kq.Held(ks) && !b.lanes.parked.Parked(ks) {
			bad("5: %v has a state in flight but is neither held nor parked", ks.key)
		}
	}
	if err := b.lanes.parked.Check(); err != nil {
		bad("7: the parking: %v", err)
	}
	for ks := range b.lanes.parked.Keys() {
		if !kq.Held(ks) {
			bad("7: %v is parked on its write but not held", ks.key)
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
