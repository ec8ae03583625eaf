package writeq

import (
	"sync"
	"sync/atomic"
)

// Stripes order the store calls of writes with their abandonment at a
// stop. A write locks its key's stripe, checks that the key is not
// abandoned, and calls the store before it unlocks; Abandon marks a key
// abandoned under the same stripe. So a write under way when its key is
// abandoned ends first, and none begins after. Keys share the 64 stripes
// by a hash of the key, which the caller computes.
//
// Invariant (6 of the package): Abandon returns only once no write holds
// the stripe, and the mark it sets is seen by every write that locks the
// stripe after; Settle returns only once the write under way in the
// stripe, if any, has ended.
type Stripes struct{ mu [64]sync.Mutex }

// Of returns the stripe of the key hashed to h, for a write to hold from
// its check of abandonment through its store call.
func (s *Stripes) Of(h uint32) *sync.Mutex { return &s.mu[h%uint32(len(s.mu))] }

// Abandon sets abandoned, the mark of a key hashed to h, once the write
// of the stripe under way, if any, has ended.
func (s *Stripes) Abandon(h uint32, abandoned *atomic.Bool) {
	mu := s.Of(h)
	mu.Lock()
	abandoned.Store(true)
	mu.Unlock()
}

// Settle waits for the write under way in the stripe of h, if any: a stop
// that marked its keys abandoned without the stripes (a halt does not
// wait before it cancels) waits here for the writes that checked before.
func (s *Stripes) Settle(h uint32) {
	mu := s.Of(h)
	mu.Lock()
	//lint:ignore SA2001 an empty critical section is the barrier
	mu.Unlock()
}
