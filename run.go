package opbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/opbus/opbus/internal/holding"
	stored "github.com/opbus/opbus/internal/record"
	"github.com/opbus/opbus/internal/wake"
	"github.com/opbus/opbus/internal/writeq"
)

// errAbandoned is the result of a store write by a pass that shutdown
// abandoned: its state is saved as pending instead.
var errAbandoned = errors.New("opbus: pass abandoned at shutdown")

// abandonAfter is how long Run waits for handlers to return once it has
// cancelled their context, before it abandons them.
const abandonAfter = time.Second

// Run dispatches queued states on a pool of workers until ctx ends. It then
// stops taking new work, waits for running handlers (and Dispatch calls) up
// to the shutdown timeout, cancels their context, waits at most a second
// more, and abandons a pass still running then: its results are not
// committed. Every state that was observed but not handled is saved in its
// object's record, so that it is handled after a restart. It returns nil
// after a clean shutdown, or the errors saving that work. A context
// cancelled with a cause wrapping [ErrHalt] stops the bus at once instead.
// Run can be called once.
func (b *Bus) Run(ctx context.Context) error {
	b.mu.Lock()
	if b.running || b.closed {
		b.mu.Unlock()
		return errors.New("opbus: Run called twice")
	}
	b.running = true
	b.frozen = true
	b.armRetries()
	b.armSchedules() // timer.go
	claimed := b.resumed.Start()
	if claimed {
		b.countPending() // the listing is pending work while it is made (wakeup.go)
	}
	b.mu.Unlock()

	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	var wg sync.WaitGroup
	for range b.cfg.workers + b.cfg.writers {
		// Workers+Writers goroutines: at most Workers run handlers, at
		// most Writers write (writestage.go).
		wg.Go(func() {
			b.work(hctx, &lane{bus: b})
		})
	}
	go b.resumeUnderRun(ctx, claimed) // not waited for: a hanging listing cannot hang Run
	if b.rel != nil {
		go b.endRelistWhenQuiet(ctx) // relist.go
	}

	<-ctx.Done()
	if cause := context.Cause(ctx); errors.Is(cause, ErrHalt) {
		b.halt(&wg, cancel, cause)
		return nil
	}
	b.mu.Lock()
	b.stop(false) // armed retries are due now: saved as pending; schedules stop
	b.mu.Unlock()

	drained := b.drained(&wg)
	if !wake.Within(drained, b.cfg.shutdown) {
		b.cfg.log.Warn("opbus: shutdown timeout: cancelling running handlers", "timeout", b.cfg.shutdown)
		cancel(nil)
		if !wake.Within(drained, abandonAfter) {
			b.cfg.log.Error("opbus: handlers ignored their cancelled context; abandoning them, their results are not committed")
		}
	}
	return b.persistPending(context.WithoutCancel(ctx))
}

// armRetries schedules the retries of failures that Dispatch or Wait met
// before Run started, a record that could not be loaded included, which
// nothing would run otherwise; b.mu is held.
func (b *Bus) armRetries() {
	for _, ks := range b.q.keys {
		if b.q.kq.Held(ks) {
			continue // its holder owns ks.rec; it arms its own retry
		}
		if due := ks.failureDue(); !due.IsZero() {
			b.retryAt(ks, due)
		} else if b.q.kq.Blocked(ks) {
			// Its record could not be loaded (a Wait or Dispatch before
			// Run met it): its queue waits for a retry, tried now.
			b.retryAt(ks, time.Now())
		}
	}
}

// failureDue returns when the earliest retry of a failed handler of ks,
// or of a failed write of its record or status, is due, or the zero time
// if none is; b.mu is held and ks is not busy.
func (ks *keyState) failureDue() time.Time {
	var due time.Time
	if ks.rec != nil {
		due = ks.rec.NextAttempt()
	}
	if x := ks.x; x != nil && x.storeFails > 0 && (!ks.saved || !ks.sunk) && !x.storeDue.IsZero() && (due.IsZero() || x.storeDue.Before(due)) {
		due = x.storeDue
	}
	return due
}

// work runs passes for Run with lane l.
func (b *Bus) work(ctx context.Context, l *lane) {
	for {
		b.mu.Lock()
		for (b.q.kq.Listed() == 0 || b.lanes.handling >= b.cfg.workers) && !b.stopping {
			b.mu.Unlock()
			b.lanes.workTok.Wait(b.stopped) // a token from offerWork, or the stop (wakeup.go)
			b.mu.Lock()
		}
		if b.stopping {
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.workOne(ctx, l)
	}
}

// workOne dispatches the first ready key, if any, with ctx: under Run in
// lane l, which takes a handler slot for it; with a nil l for Wait.
func (b *Bus) workOne(ctx context.Context, l *lane) {
	b.mu.Lock()
	if b.q.kq.Listed() == 0 || b.stopping || (l != nil && b.lanes.handling >= b.cfg.workers) {
		b.mu.Unlock()
		return
	}
	ks, _ := b.q.kq.Next()
	held := b.q.kq.Held(ks)
	if b.q.keys[ks.key] != ks || b.awaited(ks) || !b.owns(ks.key) || (held && !b.takeParked(l, ks)) {
		// gone, left to a Dispatch call, released (own.go), or held by
		// one or by a lane
		b.mu.Unlock()
		return
	}
	ctx = b.keyCtx(ctx, l, ks) // Release may cancel it (own.go)
	if !held {
		b.q.kq.Hold(ks) // the caller alone dispatches ks
		if l != nil {
			l.writes.Reset()
		}
	}
	if l != nil {
		b.lanes.handling++
		l.handling, l.ks = true, ks
		b.offerWork() // more ready keys for more free slots
	}
	b.mu.Unlock()

	ctx, h := holding.With(ctx, ks) // a handler that dispatches ks is refused (rule 5)
	if l == nil {
		if _, _, err := b.step(ctx, ks, false, nil, 0); err != nil {
			b.cfg.log.Debug("opbus: dispatch ended with errors", "key", ks.key.String(), "err", err)
		}
	}
	parked := l != nil && b.passes(ctx, l, ks)
	h.End()

	b.mu.Lock()
	if l != nil {
		b.leave(l)
		l.ks = nil
	}
	if !parked {
		b.release(ks)
	}
	b.mu.Unlock()
}

// passes dispatches the states of ks in lane l: one, or while each pass
// leaves its write to the next, up to maxMerged (rule 22a), all in one
// handler slot; and, while a write runs beside (rule 22c), the states
// that may run meanwhile. It reports whether it left ks parked on its
// write (see park), still busy; l.writes is those of a key taken
// over from its write.
func (b *Bus) passes(ctx context.Context, l *lane, ks *keyState) (parked bool) {
	l.writes.Took(cycleLimits)
	for {
		l.writes.Pass()
		ok, merged := b.passIn(ctx, l, ks)
		if ok && merged {
			continue
		}
		if ok || l.writes.InFlight() {
			switch b.park(ctx, l, ks) {
			case writeq.Run:
				continue
			case writeq.Park:
				return true
			}
		}
		break
	}
	if l.writes.Backlog.Owed() {
		b.flush(ctx, l, ks, false)
	}
	b.join(l)
	if l.writes.Kept {
		l.writes.Kept = false
		b.mu.Lock()
		delete(b.lanes.flying, ks) // kept while a write of its state was under way
		b.mu.Unlock()
	}
	return false
}

// passIn makes one pass of ks in lane l and places the write it returns
// (place). It reports whether a state was taken, and whether its pass
// left its write to the next.
func (b *Bus) passIn(ctx context.Context, l *lane, ks *keyState) (ok, merged bool) {
	_, ok, w, err := b.stepIn(ctx, ks, false, nil, 0)
	if !ok {
		return false, false
	}
	if w.d != nil {
		merged = b.place(ctx, l, w, true, false)
		err = b.closePass(w.d)
	}
	if err != nil {
		b.cfg.log.Debug("opbus: dispatch ended with errors", "key", ks.key.String(), "err", err)
	}
	b.mu.Lock()
	if !l.writes.InFlight() && !l.writes.Backlog.Owed() {
		delete(b.lanes.flying, ks)
	} else {
		// While its write is owed or runs beside, the state stays in
		// flight for shutdown (rule 16): it is handled only once that
		// write returns (passes forgets it then).
		l.writes.Kept = true
	}
	b.mu.Unlock()
	return true, merged
}

// release ends the caller's hold on ks, which lists ks again if it has
// work and wakes whoever waits, and forgets a key whose incarnation ended
// with nothing left to do; b.mu is held.
func (b *Bus) release(ks *keyState) {
	b.q.kq.Release(ks)
	kq := b.q.kq
	if ks.ended && kq.KeyLen(ks) == 0 && !kq.Due(ks) && !kq.Armed(ks) && b.q.keys[ks.key] == ks && !b.stopping {
		delete(b.q.keys, ks.key)
		b.q.ended.Put(ks.key, endedKey{inc: ks.endedInc(), sinkOwed: ks.x != nil && ks.x.sinkOwed})
	} else if b.onlyRelatedTo(ks) {
		delete(b.q.keys, ks.key) // related.go
	}
	if b.q.keys[ks.key] != ks {
		b.endHold(ks) // forgotten (own.go)
	}
}

// maxEnded bounds the deleted keys remembered so that a repeated deletion
// of an incarnation already deleted is recognised.
const maxEnded = 4096

// resumePending schedules the keys whose records hold states an earlier
// run left pending (takeOn); dispatching them reads those states first.
// It returns the error listing the store's keys.
func (b *Bus) resumePending(ctx context.Context) error {
	l, ok := b.cfg.store.(Lister)
	if !ok {
		return nil
	}
	keys, err := l.Keys(ctx)
	if err != nil {
		return fmt.Errorf("opbus: listing stored records: %w", err)
	}
	for _, key := range keys {
		b.takeOn(ctx, key) // a key already known reads its record at its next pass
	}
	return nil
}

// persistPending saves, for every key with work left, the states not yet
// handled in its record, oldest first.
func (b *Bus) persistPending(ctx context.Context) error {
	var work []leaving // own.go's: each key's work, to be saved in its record
	b.mu.Lock()
	b.closed = true
	for _, ks := range b.q.keys {
		held, due := b.q.kq.Held(ks), b.q.kq.Due(ks)
		l := leaving{ks: ks, abandoned: held, taken: ks.taken, owed: b.lanes.owed[ks]}
		if !held {
			// Its current state, if a retry of it is due (the drain made
			// every armed one due) or its queue waits behind it; or the
			// deletion of a live incarnation that the queue replaces,
			// which the next run could not make without its last state.
			l.states = b.current(ks)
		} else if in, ok := b.lanes.flying[ks]; ok && !in.retry && !in.relOnly() {
			l.states = append(l.states, in)
		}
		l.states = append(l.states, ownStates(b.queued(ks))...)
		if !held {
			l.states = ks.dropRepeats(l.states)
		}
		if len(l.states) == 0 && !(due && ks.rec == nil) && !(l.abandoned && l.owed != nil) {
			continue
		}
		work = append(work, l)
	}
	busy := b.q.kq.HeldKeys()
	b.mu.Unlock()

	for _, ks := range busy {
		// An abandoned pass, or a write it runs beside the next (rule
		// 22c), writes nothing from now on; a write under way ends first.
		b.stripes.Abandon(keyHash(ks.key), &ks.abandoned)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.shutdown)
	defer cancel()
	var errs []error
	for _, l := range work {
		if err := b.savePending(ctx, l.ks, l.states, l.abandoned, l.taken, l.owed); err != nil {
			errs = append(errs, fmt.Errorf("opbus: saving pending states of %v: %w", l.ks.key, err))
		}
	}
	if len(work) > 0 {
		b.cfg.log.Info("opbus: saved pending work for the next run", "keys", len(work), "failed", len(errs))
	}
	return errors.Join(errs...)
}

// dropRepeats leaves out of states the deletions that incarnate would
// drop: repeats of a deletion that is finished (internal/record). The next
// run could not tell them apart, since it does not know which deletions
// this one finished; b.mu is held and ks is not busy.
func (ks *keyState) dropRepeats(states []observation) []observation {
	return stateRules.DropRepeats(states, stored.Life{Live: ks.live, Ended: ks.ended, EndedInc: ks.endedInc()})
}

// replacedBy reports whether q starts with a state of another incarnation
// than the live one of ks, which is not busy; b.mu is held.
func (ks *keyState) replacedBy(b *Bus, q []observation) bool {
	return b.cfg.incarnation != nil && ks.live && ks.cur != nil && ks.rec != nil && stateRules.Replaces(q, ks.rec.Inc)
}

// stateRules are how internal/record reads a state, to choose which states
// a record keeps pending; pendingRules adds the bus's coalescing.
var stateRules = stored.Rules[observation]{Deletion: func(o *observation) (bool, string) { return o.deleted, o.inc }}

// pendingRules returns stateRules with the bus's coalescing: what may be
// folded into the next state (supersedes) and how (absorb, related.go).
func (b *Bus) pendingRules() stored.Rules[observation] {
	r := stateRules
	r.Supersedes, r.Absorb = b.supersedes, absorb
	return r
}

// savePending writes states as the pending states of ks's record. taken
// says that states already holds the record's stored pending states (a
// pass moved them to the queue), so they replace, not extend, the stored
// ones. owed is the record that passes before an abandoned one left to
// its write (rule 22a), which the abandoned pass's results must not
// take with them.
func (b *Bus) savePending(ctx context.Context, ks *keyState, states []observation, abandoned, taken bool, owed []byte) error {
	if !b.runsOn(ks.key.Kind) {
		return nil // no handler would take them: rule 34a
	}
	mu := b.stripe(ks.key)
	mu.Lock()
	defer mu.Unlock()
	rec := ks.rec
	if abandoned {
		ks.abandoned.Store(true) // the stuck pass's own writes are dropped
		rec = nil
	}
	if rec == nil && abandoned && owed != nil {
		var err error
		if rec, err = decodeRecord(ks.key, owed, b.reg.index); err != nil {
			return err
		}
	}
	if rec == nil {
		var err error
		if rec, err = b.readRecord(ctx, ks.key, b.reg.index); err != nil {
			return err // never overwrite what cannot be read
		}
		if rec == nil {
			rec = newRecord(len(b.reg.handlers))
		}
	}
	if len(states) == 0 && len(rec.States()) > 0 {
		return nil // the record holds its pending states already
	}
	if taken {
		rec.ClearPending()
	}
	// The abandoned pass's state stays whole: handlers that succeeded in
	// it were not committed, and must see it again before any later state,
	// or a value they acted on would pass unnoticed. The library's own
	// writes (such as a record held in the object) are left out, so
	// records do not nest.
	for _, o := range b.pendingRules().Keep(states, abandoned) {
		rec.AddPending(pendingState{Object: b.cmpFor(ks.key.Kind).stripped(o.new), Deleted: o.deleted})
	}
	data, err := rec.encode(b.reg.ids)
	if err != nil {
		return err
	}
	if err := b.saveRecord(ctx, ks.key, data); err != nil {
		b.cfg.log.Error("opbus: saving pending work", "key", ks.key.String(), "err", err)
		return err
	}
	b.cfg.log.Debug("opbus: saved pending states", slog.String("key", ks.key.String()), slog.Int("states", len(rec.States())))
	return nil
}
