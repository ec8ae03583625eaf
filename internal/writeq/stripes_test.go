package writeq

import (
	"sync/atomic"
	"testing"
	"time"
)

// The write of a key, under its stripe, checks the mark and writes; an
// Abandon of the key waits for it to end, and no write after it writes.
func TestAbandonWaitsForTheWriteUnderWay(t *testing.T) {
	var s Stripes
	var abandoned atomic.Bool
	var writes atomic.Int32
	write := func(locked chan<- struct{}, release <-chan struct{}) {
		mu := s.Of(7)
		mu.Lock()
		defer mu.Unlock()
		close(locked)
		if abandoned.Load() {
			return
		}
		<-release // the store call
		writes.Add(1)
	}
	release, locked := make(chan struct{}), make(chan struct{})
	go write(locked, release)
	<-locked
	done := make(chan struct{})
	go func() {
		s.Abandon(7, &abandoned)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("Abandon returned while a write of its stripe was under way")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-done
	if !abandoned.Load() || writes.Load() != 1 {
		t.Fatalf("after Abandon: abandoned %v, %d writes; want true, 1", abandoned.Load(), writes.Load())
	}
	closed := make(chan struct{})
	close(closed)
	write(make(chan struct{}), closed)
	if writes.Load() != 1 {
		t.Fatal("a write that began after Abandon wrote")
	}
}

func TestSettleWaitsForTheStripe(t *testing.T) {
	var s Stripes
	mu := s.Of(3 + 64) // the same stripe as 3
	mu.Lock()
	settled := make(chan struct{})
	go func() {
		s.Settle(3)
		close(settled)
	}()
	select {
	case <-settled:
		t.Fatal("Settle returned while the stripe was held")
	case <-time.After(20 * time.Millisecond):
	}
	mu.Unlock()
	<-settled
	if s.Of(3) == s.Of(4) {
		t.Fatal("keys 3 and 4 share a stripe")
	}
}
