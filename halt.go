package opbus

import (
	"context"
	"sync"

	"github.com/opbus/opbus/internal/wake"
)

// halt stops the bus at once (see [ErrHalt]): no worker takes more work,
// the passes in flight are abandoned so that none of their results is
// written, and their handlers' context is cancelled with cause. It waits
// up to abandonAfter for the workers, the Dispatch calls and the store
// writes under way to return.
func (b *Bus) halt(workers *sync.WaitGroup, cancel context.CancelCauseFunc, cause error) {
	b.mu.Lock()
	b.stop(true) // armed retries are dropped, schedules stop
	b.closed = true
	busy := b.q.kq.HeldKeys()
	b.mu.Unlock()

	// Before the cancel: a pass that gets a write slot once a write
	// returns to the cancel must find the bus halted (rule 22a).
	b.halted.Store(true)
	cancel(cause)
	for _, ks := range busy {
		ks.abandoned.Store(true)
	}
	// A write under way holds its key's stripe lock: wait for it to end
	// before saying the bus stopped, but no longer than for the handlers,
	// so that a store that ignores its cancelled context cannot hang the
	// halt. None starts after: writes check halted under the lock.
	settled := make(chan struct{})
	go func() {
		for _, ks := range busy {
			b.stripes.Settle(keyHash(ks.key))
		}
		<-b.drained(workers)
		close(settled)
	}()
	if wake.Within(settled, abandonAfter) {
		b.cfg.log.Warn("opbus: halted: running handlers cancelled, nothing more written", "cause", cause, "passes", len(busy))
	} else {
		b.cfg.log.Error("opbus: halted: handlers or store writes ignored their cancelled context; abandoning them, nothing more is written", "cause", cause, "passes", len(busy))
	}
}

// drained returns a channel closed once the workers have returned and no
// key is held by a pass (a worker's or a Dispatch call's).
func (b *Bus) drained(workers *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		workers.Wait()
		b.mu.Lock()
		for b.q.kq.NumHeld() > 0 {
			_ = b.waitChange(context.Background())
		}
		b.mu.Unlock()
		close(done)
	}()
	return done
}

// dropped reports whether the results of the pass holding ks are to be
// dropped: shutdown abandoned it, or the bus halted.
func (b *Bus) dropped(ks *keyState) bool {
	return ks.abandoned.Load() || b.halted.Load()
}
