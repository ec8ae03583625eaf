package opbus

import (
	"context"
	"time"

	"github.com/opbus/opbus/internal/backoff"
)

// How the bus's goroutines wait for each other. Every wait is on a
// channel, so that a wait can also end with a context (a Dispatch call
// whose deadline passes while its key is busy) and so that a goroutine
// that waits is durably blocked for testing/synctest:
//
//   - the keyqueue's change channel (keyqueue.Queue.WaitChange): a
//     goroutine that waits for a key to be let go (a Dispatch call in
//     Await, shutdown waiting for passes) releases Bus.mu until the next
//     change; notify, under Bus.mu, wakes it at every change such a
//     goroutine may wait for.
//   - workTok (a wake.Token, internal/wake): a token (at most one) that a
//     key is ready and a handler slot free. Run's idle goroutines take it;
//     the one that takes a key offers again (offerWork), so one token per
//     chance is enough.
//   - stopped: closed once, when Run begins to stop or halts.
//   - writeSem: the write slots, a counting semaphore of Options.Writers.

// notify wakes every goroutine waiting for a change (waitChange, Dispatch
// calls in awaitKey); b.mu is held.
func (b *Bus) notify() { b.q.kq.Notify() }

// waitChange lets go of b.mu until the next notify or the end of ctx,
// whose error it returns; b.mu is held, and held again on return.
func (b *Bus) waitChange(ctx context.Context) error { return b.q.kq.WaitChange(ctx) }

// stop marks the bus as stopping and wakes everything that waits for it;
// at a halt the retries armed are dropped, else they are made due, to be
// saved as pending (the keyqueue's Halt and Drain); the keys' schedules
// stop with the bus, and are no work to save (timer.go); b.mu is held.
func (b *Bus) stop(halt bool) {
	if !b.stopping {
		b.stopping = true
		close(b.stopped)
	}
	b.countPending() // a listing of the store under way is no work any more
	if halt {
		b.q.kq.Halt()
	} else {
		b.q.kq.Drain()
	}
	for _, ks := range b.q.keys {
		if ks.x != nil {
			ks.x.stopTick()
		}
	}
}

// offerWork wakes one idle goroutine of Run if a key is ready and a handler
// slot free; b.mu is held.
func (b *Bus) offerWork() {
	if b.q.kq.Listed() > 0 && b.lanes.handling < b.cfg.workers {
		b.lanes.workTok.Offer()
	}
}

// Bus.resumed (an internal/once Job) tells whether the states an earlier
// run left pending in the store have been looked for: by Run as it starts
// or, before Run, by the first Wait, which then dispatches them itself.
// While the store is being listed, the listing counts as pending work
// (countPending), so that a Wait or Settle made meanwhile does not return
// before those states are handled; under Run, Settle also waits for a
// listing that failed to be made again (unsettled).

// resume lists the store's pending states once per bus, unless another
// caller does or did, and returns the error listing it: the store is then
// listed again by the next caller; b.mu is held, and held again on return.
func (b *Bus) resume(ctx context.Context) error {
	if !b.resumed.Start() {
		return nil
	}
	b.countPending()
	return b.listPending(ctx)
}

// listPending lists the store's pending states for a caller that has
// started b.resumed; b.mu is held, and held again on return.
func (b *Bus) listPending(ctx context.Context) error {
	b.mu.Unlock()
	err := b.resumePending(ctx)
	b.mu.Lock()
	b.resumed.Finish(err) // not listed on an error: the next Wait, or Run, lists it
	b.countPending()
	b.notify()
	return err
}

// resumeUnderRun lists the store's pending states for Run (claimed: Run
// has started b.resumed for it), on a goroutine of its own so that a store
// whose listing hangs cannot keep Run from stopping; a listing that fails
// is tried again with the bus's backoff until one succeeds or ctx, Run's,
// ends, and Settle waits for it meanwhile (unsettled). A listing that a
// Wait made before Run has begun is waited for, and made again should it
// fail.
func (b *Bus) resumeUnderRun(ctx context.Context, claimed bool) {
	backoff.Policy(b.cfg.backoff).Retry(ctx, func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		if claimed {
			claimed = false
			return b.listPending(ctx)
		}
		for b.resumed.UnderWay() && ctx.Err() == nil {
			_ = b.waitChange(ctx)
		}
		if b.resumed.Done() || b.stopping || ctx.Err() != nil {
			return nil // listed, or no more to list
		}
		return b.resume(ctx)
	}, func(err error, d time.Duration) {
		b.cfg.log.Error("opbus: listing stored records; trying again", "err", err, "in", d)
	})
}
