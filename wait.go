package opbus

import (
	"context"
	"fmt"
	"time"

	"github.com/opbus/opbus/internal/wake"
)

// Wait blocks until no observed state is queued or being dispatched, or ctx
// ends. Retries scheduled for later do not count: see [Bus.Settle]. While
// [Bus.Run] has not started, Wait dispatches the queued states itself, in
// the calling goroutine, so that a program or test can Observe and Wait
// without Run; after Run has stopped, queued states are an error. The
// states an earlier run left pending in the store count as queued: Run
// looks for them as it starts (a Wait made meanwhile waits for them) and,
// before Run, the first Wait does; a Wait before Run that cannot list the
// store returns that error, and leaves the listing to the next Wait or Run.
func (b *Bus) Wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		if !b.running && !b.closed {
			// The states an earlier run left pending are queued states too.
			if err := b.resume(ctx); err != nil {
				b.mu.Unlock()
				return err
			}
		}
		for !b.running && !b.closed && b.q.kq.Listed() > 0 {
			b.mu.Unlock()
			b.workOne(ctx, nil)
			if err := ctx.Err(); err != nil {
				return err
			}
			b.mu.Lock()
		}
		if b.q.kq.Pending() == 0 {
			b.mu.Unlock()
			return nil
		}
		if err := b.undispatched(); err != nil {
			b.mu.Unlock()
			return err
		}
		idle := b.q.kq.Idle()
		var readied <-chan struct{}
		if !b.running && !b.closed {
			// A Dispatch call holds a key: states observed meanwhile
			// become ready when it returns, for this Wait to dispatch.
			readied = b.q.kq.Readied()
		}
		b.mu.Unlock()
		select {
		case <-idle:
			// Nothing pending now; looked at again, since a listing of the
			// store that failed leaves it to be listed again.
		case <-readied:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Settle blocks until the bus has nothing left to do: no state queued or
// being dispatched, and no handler, record or status write waiting for a
// retry. A failure for good ([Permanent]) leaves nothing to do. It is for
// tests and batch programs; a handler that keeps failing keeps the bus
// from settling, so give ctx a deadline. Like Wait, it dispatches itself
// while Run has not started.
func (b *Bus) Settle(ctx context.Context) error {
	for {
		if err := b.Wait(ctx); err != nil {
			return err
		}
		b.mu.Lock()
		busy, next := b.unsettled()
		b.mu.Unlock()
		if !busy && next.IsZero() {
			return nil
		}
		if err := b.settleWait(ctx, busy, next); err != nil {
			return err
		}
	}
}

// unsettled reports whether the bus has work queued, in flight or armed
// for a retry. Before Run starts no retry is armed: it queues the keys
// whose retries are due for Wait to dispatch, and returns when the next
// one is due; b.mu is held.
func (b *Bus) unsettled() (busy bool, next time.Time) {
	if b.q.kq.Pending() > 0 || (b.running && !b.stopping && !b.resumed.Done()) {
		return true, next // (or the store's listing is to be made again: wakeup.go)
	}
	for _, ks := range b.q.keys {
		if b.q.kq.Armed(ks) || b.q.kq.Due(ks) {
			return true, next
		}
		if b.running || b.closed || b.q.kq.Held(ks) {
			continue
		}
		switch due := ks.failureDue(); {
		case due.IsZero():
		case !due.After(b.now()):
			b.makeDue(ks)
			busy = true
		case next.IsZero() || due.Before(next):
			next = due
		}
	}
	return busy, next
}

// settlePoll is how often Settle looks again; retries are due in seconds.
const settlePoll = 10 * time.Millisecond

// undispatched returns an error if states are queued that no worker will
// take any more: Run has stopped; b.mu is held.
func (b *Bus) undispatched() error {
	if b.q.kq.Listed() == 0 || !(b.stopping || b.closed) {
		return nil
	}
	return fmt.Errorf("opbus: %d objects have states queued and Run has stopped: %w", b.q.kq.Listed(), ErrClosed)
}

// settleWait waits for Settle's next look: settlePoll while work is under
// way, else until next, when the earliest retry is due, on the bus's clock.
func (b *Bus) settleWait(ctx context.Context, busy bool, next time.Time) error {
	if busy {
		return wake.Sleep(ctx, settlePoll, time.AfterFunc)
	}
	return wake.Sleep(ctx, max(b.until(next), 0), b.cfg.clock.AfterFunc)
}
