package k8s

import (
	"time"

	"context"
	"encoding/json"

	"github.com/opbus/opbus"
)

// SetEventBurst raises the per-object Event burst of s, for tests whose
// objects change status more often than the default allows and that are not
// about the limit.
func SetEventBurst(s *Source, n int) {
	s.eventLog.mu.Lock()
	defer s.eventLog.mu.Unlock()
	s.eventLog.burst = float64(n)
	for _, b := range s.eventLog.buckets {
		b.tokens = max(b.tokens, float64(n))
	}
}

// Applied returns how many applies the Clients of s sent and how many they
// skipped because the object already held what they would apply.
func Applied(s *Source) (sent, skipped int64) {
	return s.applied.sent.Load(), s.applied.skipped.Load()
}

// AppliedKept returns how many objects s keeps what its Clients last
// applied to.
func AppliedKept(s *Source) int {
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	return len(s.applied.last)
}

// WriteHeldOutOfOrder holds a status of handler's field manager for key
// (older) and takes it, as a write alone that is about to start does;
// holds and writes a newer one (newer), as the next pass does; then
// writes the older one, as that first write does after a conflict. It
// returns the older write's error.
func WriteHeldOutOfOrder(ctx context.Context, s *Source, key opbus.Key, handler string, older, newer map[string]any) error {
	r, err := s.resourceFor(key)
	if err != nil {
		return err
	}
	held := func(st map[string]any) *heldStatus {
		data, _ := json.Marshal(st)
		return &heldStatus{handler: handler, status: st, data: string(data), done: true,
			self: appliedKey{manager: FieldManager(s.name, handler), gvr: r.gvr, namespace: key.Namespace, name: key.Name, status: true}}
	}
	s.sink.hold(key, held(older))
	first := s.sink.take(key)
	s.sink.hold(key, held(newer))
	s.sink.flush(ctx, key)
	_, err = s.sink.applyHeld(ctx, r, key, nil, first, nil)
	return err
}

// HoldInFlight holds a status of handler's field manager for key and
// takes it, as a write alone about to start does, and returns the write,
// to be made later (as after a conflict), and the status's place in the
// order of held statuses (see StatusesLanded).
func HoldInFlight(s *Source, key opbus.Key, handler string, status map[string]any) (func(ctx context.Context) error, uint64, error) {
	r, err := s.resourceFor(key)
	if err != nil {
		return nil, 0, err
	}
	data, _ := json.Marshal(status)
	h := &heldStatus{handler: handler, status: status, data: string(data), done: true,
		self: appliedKey{manager: FieldManager(s.name, handler), gvr: r.gvr, namespace: key.Namespace, name: key.Name, status: true}}
	s.sink.hold(key, h)
	hs := s.sink.take(key)
	return func(ctx context.Context) error {
		_, err := s.sink.applyHeld(ctx, r, key, nil, hs, nil)
		return err
	}, h.seq, nil
}

// StatusesLanded returns the place in the order of held statuses of the
// newest status of handler that landed on key.
func StatusesLanded(s *Source, key opbus.Key, handler string) uint64 {
	return s.sink.landedSeq(key, FieldManager(s.name, handler))
}

// ShardNotOwned returns how many object states the watch of s received
// that another replica owns, and how many buckets s owns.
func ShardNotOwned(s *Source) (notOwned int64, buckets int) {
	s.mu.Lock()
	sh := s.sharder
	s.mu.Unlock()
	if sh == nil {
		return 0, 0
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.notOwned.Load(), sh.owned.count()
}

// ShardKeys returns how many live keys s's replica holds the hash of in
// its owned buckets, how many keys' hashes it holds in all (live and
// deleted), and how many of those lie outside its owned buckets.
func ShardKeys(s *Source) (owned, held, outside int) {
	s.mu.Lock()
	sh := s.sharder
	s.mu.Unlock()
	if sh == nil {
		return 0, 0, 0
	}
	sh.mu.Lock()
	set := sh.owned
	sh.mu.Unlock()
	owned, held = sh.keys.count(set)
	return owned, held, sh.keys.outside(set)
}

// ShardGrace returns how long after a member's Lease expired its buckets
// are taken over, for cfg.
func ShardGrace(cfg Shards) time.Duration { return shardGrace(cfg) }

// CrashShards makes s's replica stop, as far as its shard ring sees, as a
// killed process would: it renews its Lease no more and leaves it in
// place when Run ends (end Run's context after this call), so that the
// others take its buckets once the Lease expired plus the grace. It
// returns when the Lease was last renewed (on this process's clock),
// zero if s is not sharded.
func CrashShards(s *Source) time.Time {
	s.mu.Lock()
	sh := s.sharder
	s.mu.Unlock()
	if sh == nil {
		return time.Time{}
	}
	return sh.ring.abandon()
}
