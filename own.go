package opbus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/opbus/opbus/internal/sharing"
)

// Sharing keys between buses: a bus owns every key until it releases
// some (Release), and owns them again once it acquires them (Acquire).
// Buses that share a store hand keys to each other this way: one
// releases, then the other acquires; the store carries each key's record
// (digests, timers, slots, pending states) from one to the other.

// ownership is what a Bus keeps of the keys it owns.
type ownership struct {
	// calls serialises Release and Acquire calls.
	calls sync.Mutex
	// ops are the Release and Acquire calls made, which decide whether
	// the bus owns a key. Guarded by Bus.mu.
	ops sharing.Ops[Key]
	// held is the cancellable context of the passes of each key that
	// Run's goroutines have held since the first Release or Acquire call:
	// Release cancels it when it abandons the key's passes; it ends when
	// the key is forgotten (endHold). Guarded by Bus.mu.
	held sharing.Contexts[*keyState]
}

// owns reports whether the bus owns key; b.mu is held.
func (b *Bus) owns(key Key) bool { return b.own.ops.Owns(key) }

// notOwned returns the error of an observation of key, which the bus does
// not own.
func notOwned(what string, key Key) error {
	return fmt.Errorf("opbus: %s of %v: %w (it was released to another bus; Acquire takes it on again)", what, key, ErrNotOwned)
}

// keyCtx returns the context for the passes of ks that Run's lane l
// makes: ctx, Run's, or, once Release or Acquire has been called, the
// key's own context below it, which Release cancels when it abandons
// them and which lasts while the bus keeps the key (endHold); so that a
// bus that shares no keys makes none. Wait's passes (nil l) get ctx, the
// caller's. b.mu is held.
func (b *Bus) keyCtx(ctx context.Context, l *lane, ks *keyState) context.Context {
	if l == nil || !b.own.ops.Made() {
		return ctx
	}
	return b.own.held.For(ctx, ks)
}

// endHold ends the context keyCtx made for ks, which the bus forgets;
// b.mu is held.
func (b *Bus) endHold(ks *keyState) { b.own.held.End(ks) }

// leaving is a key's work, released or left at Run's stop, to be saved in
// its record; owed is the record of the passes before an abandoned one,
// merged into its write.
type leaving struct {
	ks        *keyState
	states    []observation
	abandoned bool // a pass of it was abandoned
	taken     bool // states include the record's pending states
	owed      []byte
	mine      bool // Release holds the key (no abandoned pass does)
	timers    bool // its record in memory has schedules, whose anchors the store may not have
	err       error
}

// Release gives up the keys that keys names: from its call on, the bus
// starts no pass for them, and [Bus.Observe], [Bus.Dispatch] and their
// variants return an error wrapping [ErrNotOwned] for them. Release waits
// until no pass of such a key runs and no write of one is under way, then
// saves their queued states as pending in their records (as a stopping
// Run does), stops their timers and retries, and forgets them: nothing
// is written for those keys afterwards, until [Bus.Acquire] takes them
// on again. Another bus sharing the store may then acquire them.
//
// If ctx ends first, the passes still running are abandoned as at Run's
// shutdown timeout: their results are not written, the context of those
// Run dispatches is cancelled with a cause wrapping ErrNotOwned, and
// their states are saved as pending. (A Dispatch call's or Wait's handlers
// get that call's context, which Release does not cancel; nor does it
// cancel the passes of keys held since before the bus's first Release or
// Acquire call: a program that shares keys calls one of them before it
// observes any, as a replica computing its share does.) Release then returns an error wrapping ctx's,
// having waited at most a second more for them. It also returns the
// errors saving the pending states: a key whose states could not be
// saved stays in memory, not owned, and a later Release tries again.
//
// keys is called with the bus's lock held, for every key known and every
// key observed later: it must be quick and must not call the bus. Release
// and Acquire calls are serialised; both are safe to call concurrently
// with Observe, Dispatch and Run. After Run has begun to stop, Release
// returns an error wrapping [ErrClosed] (Run saves the pending states).
func (b *Bus) Release(ctx context.Context, keys func(Key) bool) error {
	if keys == nil {
		return errors.New("opbus: Release: nil key predicate: expected a function reporting the keys to give up")
	}
	b.own.calls.Lock()
	defer b.own.calls.Unlock()
	b.mu.Lock()
	if err := b.freeze(); err != nil || b.stopping {
		b.mu.Unlock()
		return fmt.Errorf("opbus: Release: %w", ErrClosed)
	}
	b.own.ops.Release(keys)
	var targets []*keyState
	for _, ks := range b.q.keys {
		if keys(ks.key) {
			// Its timers stay armed until its work is taken (takeLeft):
			// a retry armed is work to save; one that fires meanwhile
			// only lists the key, which no pass takes now.
			targets = append(targets, ks)
		}
	}
	var abandoned map[*keyState]*observation
	busy, waitErr := b.q.kq.WaitReleased(ctx, targets) // b.mu let go and held again
	if waitErr != nil {
		abandoned = b.abandon(busy) // b.mu held, let go and held again
	}
	left := b.takeLeft(targets, abandoned)
	b.mu.Unlock()

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.shutdown)
	defer cancel()
	var errs []error
	if waitErr != nil {
		errs = append(errs, fmt.Errorf("opbus: Release: waiting for the passes of the keys released: %w; %d abandoned, their results not written", waitErr, len(abandoned)))
	}
	for i := range left {
		l := &left[i]
		if len(l.states) == 0 && !(l.abandoned && l.owed != nil) && !l.timers {
			continue
		}
		if l.err = b.savePending(sctx, l.ks, l.states, l.abandoned, l.taken, l.owed); l.err != nil {
			errs = append(errs, fmt.Errorf("opbus: Release: saving pending states of %v: %w", l.ks.key, l.err))
		}
	}
	b.mu.Lock()
	for i := range left {
		b.forget(&left[i])
	}
	b.notify()
	b.mu.Unlock()
	return errors.Join(errs...)
}

// quiet stops the retry and schedule timers of ks; b.mu is held.
func (b *Bus) quiet(ks *keyState) {
	b.q.kq.StopRetry(ks)
	if ks.x != nil {
		ks.x.stopTick()
	}
}

// abandon drops the results of the passes holding busy, cancels their
// context, and waits up to abandonAfter for them to let go; it returns
// the state each was dispatching. b.mu is held, let go while it waits,
// and held again on return.
func (b *Bus) abandon(busy []*keyState) map[*keyState]*observation {
	flying := map[*keyState]*observation{}
	for _, ks := range busy {
		if in, ok := b.lanes.flying[ks]; ok && !in.retry && !in.relOnly() {
			flying[ks] = &in
		} else {
			flying[ks] = nil
		}
	}
	for _, ks := range busy {
		// No write starts from now on (save checks it under the key's
		// stripe lock); one under way ends before the pending states are
		// saved (savePending takes that lock). Not taken here: waiting
		// below lets that write end with the pass.
		ks.abandoned.Store(true)
		b.own.held.Cancel(ks, notOwned("pass", ks.key))
	}
	wctx, cancel := context.WithTimeout(context.Background(), abandonAfter)
	defer cancel()
	_, _ = b.q.kq.WaitReleased(wctx, busy) // one still running writes nothing
	return flying
}

// takeLeft takes the work of targets to be saved: Release holds each that
// no (abandoned) pass holds, takes its queue and stops its timers; b.mu
// is held.
func (b *Bus) takeLeft(targets []*keyState, abandoned map[*keyState]*observation) []leaving {
	var out []leaving
	for _, ks := range targets {
		if b.q.keys[ks.key] != ks {
			continue // forgotten meanwhile: a finished deletion
		}
		fl, isAbandoned := abandoned[ks]
		// A key whose pass an earlier Release abandoned, and whose
		// states it could not save, has a record in memory that may
		// hold that pass's results: it is never written.
		isAbandoned = isAbandoned || ks.abandoned.Load()
		l := leaving{ks: ks, abandoned: isAbandoned, taken: ks.taken, owed: b.lanes.owed[ks]}
		if fl != nil {
			l.states = append(l.states, *fl)
		}
		if !b.q.kq.Held(ks) {
			l.mine = true
			b.q.kq.Hold(ks)
			if !isAbandoned || fl == nil {
				// An abandoned key whose pass had taken no state
				// (stepIn takes none once it is abandoned) still has its
				// current state to finish, as any other.
				l.states = b.current(ks)
			}
			if !isAbandoned {
				// A run moves its schedule's anchor in memory only
				// (timer.go): written now, the next owner runs the
				// handler at the next due time, not once more at once.
				l.timers = ks.rec != nil && ks.live && !ks.deleting && len(ks.rec.Timers()) > 0
			}
		}
		b.quiet(ks)
		for _, o := range b.q.kq.Clear(ks) {
			if !o.relOnly() {
				o.rel = nil
				l.states = append(l.states, o)
			}
		}
		if !isAbandoned {
			l.states = ks.dropRepeats(l.states)
		}
		out = append(out, l)
	}
	return out
}

// current returns the state that ks, held by the caller, has yet to
// finish: its current state, if a retry of it is armed or due, its
// deletion is unfinished or its queue waits behind it, and the deletion
// of a live incarnation the queue replaces; b.mu is held.
func (b *Bus) current(ks *keyState) []observation {
	kq := b.q.kq
	if (kq.Due(ks) || kq.Armed(ks) || ks.deleting || kq.Blocked(ks)) && (ks.cur != nil || ks.deleting) {
		o := observation{new: ks.cur, deleted: ks.deleting}
		if ks.rec != nil {
			o.inc = ks.rec.Inc
		}
		return []observation{o}
	}
	if ks.replacedBy(b, ownStates(b.queued(ks))) {
		return []observation{{deleted: true, new: ks.cur, inc: ks.rec.Inc}}
	}
	return nil
}

// forget drops l's key from memory once its work is saved; if saving
// failed, its states are queued again, to be saved by a later Release
// or handled after Acquire. b.mu is held.
func (b *Bus) forget(l *leaving) {
	ks := l.ks
	if l.err == nil {
		if b.q.keys[ks.key] == ks {
			delete(b.q.keys, ks.key)
		}
		b.q.ended.Delete(ks.key)
		delete(b.lanes.owed, ks)
		b.endHold(ks)
	} else {
		for i := range l.states {
			l.states[i].tag.Awaited = false // no call waits for it now
		}
		b.q.kq.PushFront(ks, l.states...)
	}
	if l.mine {
		b.q.kq.Release(ks)
	}
}

// Acquire takes on the keys that keys names: the bus owns them again (a
// new bus owns every key), and the records the store holds of those keys
// are read as Run reads them when it starts: pending states are queued,
// expired tombstones dropped. A key's timers are armed from the grid its
// record keeps at its first pass, once it is observed (or dispatched for
// a pending state); its digests make a value handled by the previous
// owner count as handled. Keys already owned are left as they are. It
// returns the error listing the store (a store that is not a [Lister] is
// not listed). ctx bounds the listing and the reads.
//
// keys is called with the bus's lock held: it must be quick and must not
// call the bus. After Run has begun to stop, Acquire returns an error
// wrapping [ErrClosed]. See [Bus.Release].
func (b *Bus) Acquire(ctx context.Context, keys func(Key) bool) error {
	if keys == nil {
		return errors.New("opbus: Acquire: nil key predicate: expected a function reporting the keys to take on")
	}
	b.own.calls.Lock()
	defer b.own.calls.Unlock()
	b.mu.Lock()
	if err := b.freeze(); err != nil || b.stopping {
		b.mu.Unlock()
		return fmt.Errorf("opbus: Acquire: %w", ErrClosed)
	}
	b.own.ops.Acquire(keys)
	b.mu.Unlock()
	l, ok := b.cfg.store.(Lister)
	if !ok {
		return nil
	}
	stored, err := l.Keys(ctx)
	if err != nil {
		return fmt.Errorf("opbus: Acquire: listing stored records: %w", err)
	}
	for _, key := range stored {
		b.mu.Lock()
		_, known := b.q.keys[key]
		take := !known && keys(key) && b.owns(key)
		b.mu.Unlock()
		if take {
			b.takeOn(ctx, key)
		}
	}
	return nil
}

// takeOn queues key for its first pass if its record holds pending
// states, or cannot be read now (the pass reads it again, with backoff),
// as resumePending does at Run's start.
func (b *Bus) takeOn(ctx context.Context, key Key) {
	rec, err := b.readRecord(ctx, key, b.reg.index)
	if err == nil && rec != nil && rec.Expired(b.now()) {
		if err := b.dropTombstone(ctx, key); err != nil {
			b.cfg.log.Warn("opbus: an expired tombstone stays", "key", key.String(), "err", err)
		}
		return
	}
	if err == nil && (rec == nil || len(rec.States()) == 0) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, known := b.q.keys[key]; !known && !b.stopping && b.owns(key) {
		b.makeDue(b.keyState(key))
	}
}
