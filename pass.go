package opbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/opbus/opbus/internal/backoff"
	"github.com/opbus/opbus/internal/isolate"
	"github.com/opbus/opbus/internal/perhandler"
)

// pass is one pass of an observed state through the handlers of its key.
type pass struct {
	b     *Bus
	ks    *keyState
	rec   *record
	old   map[string]any // the state before, nil if unknown
	new   map[string]any
	diff  Diff // old → new, computed on first use
	diffd bool
	// scoped: the changes within the subscribed subtrees, computed on
	// first use (subscribed.go); scopedd tells it is.
	scoped  Diff
	scopedd bool
	all     Diff   // nil → new: the whole object as one change, for creates
	id      string // correlation ID, made when a handler first runs
	force   bool   // run failing handlers whatever their backoff (Dispatch)
	dirty   bool   // rec changed
	errs    []error
	due     time.Time // earliest retry due; zero for none
	view    *relView  // the view of related objects new holds (view.go); nil for none
	now     time.Time // when schedules were first checked in this pass (timer.go)
	tick    bool      // the handler being run is due to its schedule (timer.go)
	// storeFail: a save or publish of this pass failed (counted once).
	storeFail bool
	// relistWait: the object waits for the relist to end (relist.go).
	relistWait bool
}

func (d *pass) setValue(name, value string) {
	if d.rec.SetValue(name, value) {
		d.dirty = true
	}
}

func (d *pass) setSlot(id string, s Status) error {
	d.b.mu.Lock()
	err := d.b.reg.owners.Settable(id)
	d.b.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return fmt.Errorf("opbus: SetSlot(%q): %w", id, err)
	}
	d.putSlot(id, s)
	return nil
}

func (d *pass) putSlot(id string, s Status) {
	if cur, ok := d.rec.Slots.get(id); ok == !s.IsZero() && cur == s {
		return
	}
	if d.rec.Slots == nil {
		d.rec.Slots = Slots{}
	}
	d.rec.Slots.Set(id, s)
	d.dirty = true
}

// retryAt notes that a retry is due at t.
func (d *pass) retryAt(t time.Time) {
	if d.due.IsZero() || t.Before(d.due) {
		d.due = t
	}
}

func (d *pass) changes() Diff {
	if !d.diffd {
		d.diffd = true
		if d.old != nil {
			d.diff = d.b.cmpFor(d.ks.key.Kind).Compare(d.old, d.new)
		}
	}
	return d.diff
}

func (d *pass) correlation() string {
	if d.id == "" {
		d.id = uuid.NewString()
	}
	return d.id
}

// step takes the next observation of ks, which the caller holds busy (or
// given, one that needs no queue), dispatches it and makes its write
// inline. It returns the observation it took (ok false if there was none)
// and the errors of its pass. force is Dispatch's: take the queue even
// while it waits for a retry, and run failing handlers whatever their
// backoff; own is its state's seq (0 for a lane; see take). A Dispatch or
// Wait call holds no lane: it owns its key while it steps.
func (b *Bus) step(ctx context.Context, ks *keyState, force bool, given *observation, own uint64) (o observation, ok bool, err error) {
	o, ok, w, err := b.stepIn(ctx, ks, force, given, own)
	if !ok {
		return o, false, nil
	}
	if w.d != nil {
		b.writeNow(ctx, w)
		err = b.closePass(w.d)
	}
	b.mu.Lock()
	delete(b.lanes.flying, ks)
	b.mu.Unlock()
	return o, true, err
}

// stepIn takes the next observation of ks, as step does, and runs its
// pass; it returns the pass's write, which the caller, the loop that owns
// ks, places and then closes (closePass). err is that of a pass that
// could not run (w.d nil); the errors of one that ran are closePass's. The
// state taken stays in Bus.flying for shutdown; the caller forgets it once
// no write of it is owed or under way.
func (b *Bus) stepIn(ctx context.Context, ks *keyState, force bool, given *observation, own uint64) (o observation, ok bool, w write, err error) {
	b.mu.Lock()
	switch {
	case given != nil:
		o, ok = *given, true
	case !ks.abandoned.Load():
		// A key that Release or Run's shutdown abandoned takes no more
		// states: they save those still queued (takeLeft,
		// persistPending), and one taken now would go to a pass whose
		// results are dropped, saved by nobody (rule 48).
		o, ok = b.take(ks, force, own)
	}
	if ok {
		fl := o
		if o.retry && (ks.cur != nil || ks.deleting) {
			// What shutdown keeps if this pass is abandoned: the state
			// retried (the caller owns ks, so it may read it here).
			fl = observation{new: ks.cur, deleted: ks.deleting}
		}
		b.lanes.flying[ks] = fl
	}
	b.mu.Unlock()
	if !ok {
		return o, false, w, nil
	}
	w, err = b.loadAndProcess(ctx, ks, &o, force)
	return o, true, w, err
}

// loadAndProcess loads the record of ks if needed and dispatches o, or the pending
// states of the record, which go before it, and returns the pass's write.
func (b *Bus) loadAndProcess(ctx context.Context, ks *keyState, op *observation, force bool) (write, error) {
	o := *op
	if b.relatedAside(ks, o) {
		return write{}, nil
	}
	if ks.rec == nil && !b.runsOn(ks.key.Kind) {
		ks.rec, ks.saved = newRecord(len(b.reg.handlers)), true // nothing to read: rule 34a
	}
	if ks.rec == nil {
		if err := b.load(ctx, ks); err != nil {
			b.mu.Lock()
			x := ks.extraLocked()
			x.loadFails++
			b.unshift(ks, o)
			b.q.kq.Block(ks, true)
			b.retryAt(ks, b.now().Add(b.cfg.backoff.delay(x.loadFails)))
			b.mu.Unlock()
			return write{}, err
		}
		if ks.x != nil {
			ks.x.loadFails = 0
		}
		b.waitForRelist(ks) // relist.go
		if p := ks.rec.States(); len(p) > 0 {
			// States an earlier run left pending are older than any
			// observed since: they go first.
			ks.rec.ClearPending()
			ks.saved = false
			os := make([]observation, 0, len(p)+1)
			for _, s := range p {
				if s.Object == nil && !s.Deleted {
					continue // nothing to handle (written by an older build)
				}
				inc, _ := b.incarnationOf(s.Object)
				os = append(os, observation{new: s.Object, deleted: s.Deleted, inc: inc, resumed: true})
			}
			b.cfg.log.Info("opbus: resuming states left pending by an earlier run", "key", ks.key.String(), "states", len(p))
			b.mu.Lock()
			b.unshift(ks, append(os, o)...)
			o, _ = b.take(ks, true, o.tag.Seq) // a pending state, or o itself
			b.lanes.flying[ks] = o
			ks.taken = true
			b.mu.Unlock()
		}
	}
	w, err := b.process(ctx, ks, &o, force)
	*op = o
	return w, err
}

// process dispatches one observation of ks, whose record is loaded, and
// returns the pass's write (commit). The incarnation rules may replace *o
// with the deletion that must go first (putting *o back at the head of
// the queue).
func (b *Bus) process(ctx context.Context, ks *keyState, o *observation, force bool) (write, error) {
	b.stats.dispatched.Add(1)
	if o.retry && ks.cur == nil && !ks.deleting {
		return write{}, nil // a retry of a record load: the queue goes on
	}
	if !o.retry && !b.incarnate(ks, o) {
		return write{}, b.repeatDeleted(ctx, ks, o)
	}
	d := &pass{b: b, ks: ks, rec: ks.rec, force: force}
	switch {
	case o.retry, o.relOnly():
		d.old, d.new = ks.cur, ks.cur
	case o.hasOld:
		d.old, d.new = o.old, o.new
	default:
		d.old, d.new = ks.cur, o.new
		if p := o.pre; p != nil && d.old != nil && sameMap(p.base, d.old) && p.cmp == b.cmpFor(ks.key.Kind) {
			d.scoped, d.scopedd = p.diff, true // what Observe found (precompare.go)
		}
	}
	if o.deleted && o.new == nil {
		d.new = ks.cur
	}
	if !ks.seen && !o.hasOld && !o.deleted && ks.rec.hasAny() {
		b.extra(ks).handlers.Owe(len(b.reg.handlers), func(i int) bool { return b.reg.handlers[i].wants(Resume) })
	}
	ks.seen = true

	finished := false
	if o.deleted || (o.retry && ks.deleting) {
		ks.deleting, ks.live = true, false
		ks.cur = d.new
		finished = b.runDelete(ctx, d)
	} else {
		ks.cur = d.new
		b.withRelated(d, o)
		b.runHandlers(ctx, d, o.coalesced)
		b.startSchedules(d)
		if b.runsOn(ks.key.Kind) {
			b.runCollectors(ctx, d)
		}
	}
	return b.commit(d, finished), nil
}

// incarnate applies the incarnation rules to an observation of ks before
// it is dispatched: a deletion of an incarnation already deleted is
// dropped (false); a state of another incarnation than the live one first
// deletes the live one; the first state of an incarnation starts it, with
// a record of its own.
func (b *Bus) incarnate(ks *keyState, o *observation) bool {
	if o.deleted {
		if (o.inc != "" && o.inc == ks.endedInc()) || (!ks.live && ks.ended && o.inc == "") {
			b.cfg.log.Debug("opbus: deletion of an incarnation already deleted", "key", ks.key.String())
			return false
		}
		if !ks.live && ks.rec.Inc != "" && o.inc != "" && ks.rec.Inc != o.inc && !(o.resumed && ks.rec.EndedAt() == 0 && ks.rec.hasAny()) {
			// The record is of another incarnation: this one was never
			// handled here, or its deletion is finished (a stale repeat).
			// Not so for a deletion an earlier run left pending after the
			// record's live incarnation: observed after it, it ends it, as
			// it would have in that run.
			b.cfg.log.Debug("opbus: deletion of an incarnation this record is not of", "key", ks.key.String(), "stored", ks.rec.Inc, "deleted", o.inc)
			return false
		}
		if ks.rec.Inc == "" && o.inc != "" {
			ks.rec.Inc = o.inc // so that a repeat of this deletion is known
		}
		return true
	}
	if ks.live && ks.rec.Inc != "" && o.inc != "" && o.inc != ks.rec.Inc {
		// A new incarnation without an observed deletion (a watch that
		// missed it): delete the live one first, with its last state.
		b.mu.Lock()
		b.unshift(ks, *o)
		*o = observation{deleted: true, inc: ks.rec.Inc, new: ks.cur}
		b.lanes.flying[ks] = *o // what shutdown must keep if this pass is abandoned
		b.mu.Unlock()
		return true
	}
	if !ks.live {
		if ks.rec.EndedAt() != 0 {
			b.afterTombstone(ks)
		}
		if ks.rec.Inc != "" && o.inc != "" && ks.rec.Inc != o.inc {
			b.restart(ks, o.inc)
		}
		if ks.rec.Inc == "" && o.inc != "" {
			ks.rec.Inc = o.inc
			ks.saved = false
		}
		ks.live, ks.ended = true, false
	}
	return true
}

// restart sets aside a stored record of another incarnation than inc.
func (b *Bus) restart(ks *keyState, inc string) {
	b.cfg.log.Warn("opbus: stored record is of another incarnation; starting afresh", "key", ks.key.String(), "stored", ks.rec.Inc, "observed", inc)
	ks.rec = newRecord(len(b.reg.handlers))
	ks.rec.Inc = inc
	ks.saved = false
	ks.clean = 0
	ks.handlers().Reset()
}

// load reads the record of ks.
func (b *Bus) load(ctx context.Context, ks *keyState) error {
	rec, err := b.readRecord(ctx, ks.key, b.reg.index)
	var bad *RecordError
	if err != nil && !errors.As(err, &bad) {
		b.cfg.log.Error("opbus: loading record", "key", ks.key.String(), "err", err)
		return fmt.Errorf("opbus: loading record of %v: %w", ks.key, err)
	}
	if err == nil && rec == nil {
		ks.rec = newRecord(len(b.reg.handlers))
		ks.saved = true
		return nil
	}
	if err == nil && rec.EndedAt() != 0 {
		b.loadedTombstone(ks, rec) // tombstone.go
		return nil
	}
	if err != nil {
		b.cfg.log.Error("opbus: stored record cannot be read; its handlers wait until it is repaired or deleted", "key", ks.key.String(), "err", err)
		if b.cfg.sink != nil && (ks.x == nil || ks.x.loadFails == 0) {
			msg := err.Error()
			_ = b.cfg.sink.PutStatus(ctx, ks.key, ks.cur, ErrorStatus(msg), Slots{busSlot: ErrorStatus(msg)})
			ks.sunk = false
		}
		return err
	}
	ks.rec = rec
	ks.saved = true
	b.mu.Lock()
	if !ks.shown {
		// What the last run published: the baseline for "status changed".
		// shown stays false so that this run still hands its first commit
		// to the sink.
		ks.published = rec.Slots.clone()
	}
	b.mu.Unlock()
	return nil
}

// handlers returns what the passes of ks keep of its handlers; nil, which
// reads as nothing kept, if ks has no extra part.
func (ks *keyState) handlers() *perhandler.State {
	if ks.x == nil {
		return nil
	}
	return &ks.x.handlers
}

// waiting reports whether h is failing on the value cur and must not run
// now: it failed for good, or its retry is not due yet.
func (d *pass) waiting(h *handler, cur digest) bool {
	f := d.rec.FailureOn(h.id, cur)
	if f == nil || f.Permanent {
		return f != nil
	}
	if !d.force && d.b.now().Before(f.At) {
		d.retryAt(f.At)
		return true
	}
	return false
}

func (b *Bus) runHandlers(ctx context.Context, d *pass, coalesced bool) {
	ks := d.ks
	waited := false
	for _, h := range b.reg.handlers {
		if !h.forKind(ks.key.Kind) {
			continue
		}
		if d.relistWait && len(h.rel) > 0 && b.differsInRelist(d, h) {
			waited = true // relist.go
			continue
		}
		if ks.handlers().Owes(h.idx) {
			cur, err := b.digestFor(d, h)
			if err != nil {
				d.unusable(h, err)
				continue
			}
			if !d.waiting(h, cur) {
				b.run(ctx, d, h, Resume, cur, coalesced)
			}
			continue
		}
		if !h.wants(Create) && !h.wants(Update) {
			continue
		}
		if d.rec.Timers() != nil && b.runDue(ctx, d, h, coalesced) {
			continue // a run due to its schedule (timer.go)
		}
		if !h.wants(Update) && !d.rec.Digests[h.idx].isZero() {
			continue // created already; its value is no concern of a create-only handler
		}
		// A clean handler's value cannot have changed unless the diff
		// touches its fields: skip the digest.
		if d.old != nil && ks.clean.Is(h.idx) && !touches(b.cmpOf(h, ks.key.Kind), d.subscribed(), h.fields) {
			continue
		}
		cur, err := b.digestFor(d, h)
		if err != nil {
			d.unusable(h, err)
			continue
		}
		stored := d.rec.Digests[h.idx]
		if stored == cur {
			ks.clean.Set(h.idx, true)
			d.recovered(h)
			continue
		}
		ks.clean.Set(h.idx, false)
		if d.waiting(h, cur) {
			continue
		}
		typ := Update
		if stored.isZero() {
			typ = Create
		}
		if !h.wants(typ) {
			// Not this handler's event: take the value as the baseline
			// its next change is measured against.
			d.rec.Digests[h.idx] = cur
			d.dirty = true
			ks.clean.Set(h.idx, true)
			continue
		}
		b.run(ctx, d, h, typ, cur, coalesced)
	}
	if d.relistWait && !waited {
		b.relistWaitOver(ks.key) // each handler reading related objects is back on its value
	}
}

// recovered ends the failure of h when its value is back to the one it
// last handled successfully: nothing is left to do, so its slot shows
// again what that success returned, and no retry is due.
func (d *pass) recovered(h *handler) {
	_, failing := d.rec.Fails[h.id]
	_, saved := d.rec.Good[h.id]
	if !failing && !saved {
		return
	}
	d.putSlot(h.id, d.rec.Good[h.id])
	delete(d.rec.Good, h.id)
	delete(d.rec.Fails, h.id)
	d.ks.handlers().Forget(h.idx)
	d.dirty = true
}

// unusable reports an object whose subscribed value cannot be digested
// (it holds a value that is not JSON-like): the handler cannot run.
func (d *pass) unusable(h *handler, err error) {
	err = within(err, "opbus: handler %q on %v", h.id, d.ks.key)
	d.b.cfg.log.Error("opbus: object has an unsupported value", "key", d.ks.key.String(), "handler", h.id, "err", err)
	d.putSlot(h.id, ErrorStatus(err.Error()))
	d.errs = append(d.errs, err)
}

// event builds the event for h.
func (d *pass) event(h *handler, typ EventType, cur digest, coalesced bool) *Event {
	old := d.old
	cmp := d.b.cmpOf(h, d.ks.key.Kind)
	var changes Diff
	if typ != Delete {
		changes = d.subscribed()
		if h.wcmp != nil && d.old != nil {
			changes = cmp.Compare(d.old, d.new) // less what h writes
		}
	}
	if base, behind := d.ks.handlers().Behind(h.idx); behind {
		old = base // the handler failed since: diff from what it last handled
		changes = nil
		if base != nil && typ != Delete {
			changes = cmp.Compare(base, d.new)
		}
	}
	if old == nil && typ == Update && h.keepOld {
		if kept := d.keptOld(h); kept != nil {
			old, changes = kept, cmp.Compare(kept, d.new)
		}
	}
	if old == nil && d.new != nil && typ != Delete {
		if h.wcmp != nil {
			changes = cmp.Compare(nil, d.new)
		} else {
			if d.all == nil {
				d.all = d.b.cmpFor(d.ks.key.Kind).Compare(nil, d.new)
			}
			changes = d.all
		}
	}
	ev := &Event{
		Type: typ, Key: d.ks.key, Old: old, New: d.new,
		Handler: h.id, Attempt: d.rec.Attempt(h.id, cur),
		Coalesced: coalesced, d: d,
	}
	if typ == Delete {
		ev.Old, ev.New = d.new, nil
	}
	ev.Changes = relevant(cmp, changes, h.fields, old, ev.New)
	return ev
}

// run calls h and records its result. A pass that shutdown abandoned
// calls no more handlers.
func (b *Bus) run(ctx context.Context, d *pass, h *handler, typ EventType, cur digest, coalesced bool) {
	if b.dropped(d.ks) {
		return
	}
	if b.cfg.runs != nil && !b.cfg.runs(h.id) {
		d.ks.clean.Set(h.idx, false)
		return
	}
	ev := d.event(h, typ, cur, coalesced)
	if h.when != nil {
		ok, err := b.filter(h, ev)
		if err == nil && !ok {
			d.ks.clean.Set(h.idx, false)
			return
		}
		if err != nil {
			ev.ID = d.correlation()
			b.failed(d, h, ev, cur, Status{}, err, 0)
			return
		}
	}
	ev.ID = d.correlation()
	ev.Due = d.tick
	began := b.now() // on the bus's clock, for schedules
	start := time.Now()
	st, err := b.call(ctx, h, ev)
	took := time.Since(start)
	b.stats.ran.Add(1)
	if lerr := st.check(); lerr != nil {
		if err == nil {
			st, err = Status{}, within(lerr, "returned a bad status")
		} else if st.Level.check() == nil {
			st.Reason = "" // failed anyway: the status shows, without the reason
		}
	}
	if b.cfg.observer != nil {
		b.cfg.observer.Handled(d.ks.key, h.id, ev.Attempt, took, err)
	}
	if err != nil && ctx.Err() != nil && b.isStopping() {
		// Cancelled by shutdown: not a failure of the handler. The state
		// is saved as pending and handled after a restart.
		b.cfg.log.Warn("opbus: handler interrupted by shutdown", "key", d.ks.key.String(), "handler", h.id, "id", ev.ID, "err", err)
		d.retryAt(b.now())
		return
	}
	if err != nil {
		b.failed(d, h, ev, cur, st, err, took)
		return
	}
	if b.cfg.log.Enabled(ctx, slog.LevelDebug) {
		b.cfg.log.Debug("opbus: handler succeeded", "key", d.ks.key.String(), "handler", h.id, "event", typ.String(), "attempt", ev.Attempt, "id", ev.ID, "took", took, "status", st.String())
	}
	_, failing := d.rec.Fails[h.id]
	_, saved := d.rec.Good[h.id]
	if d.rec.Digests[h.idx] != cur || failing || saved {
		d.dirty = true // a run that changes nothing writes nothing (a due run)
	}
	d.rec.Digests[h.idx] = cur
	if h.keepOld && typ != Delete {
		b.keepOld(d, h)
	}
	delete(d.rec.Fails, h.id)
	delete(d.rec.Good, h.id)
	d.ks.handlers().Forget(h.idx)
	d.ks.handlers().Paid(h.idx)
	d.ks.clean.Set(h.idx, typ != Delete)
	d.putSlot(h.id, st)
	if typ != Delete && (ev.again > 0 || h.every > 0 || d.rec.Timers() != nil) {
		d.scheduled(h, ev.again, began) // timer.go
	}
}

// failed records a failure of h on the value cur.
func (b *Bus) failed(d *pass, h *handler, ev *Event, cur digest, st Status, err error, took time.Duration) {
	attrs := func() []any { // built only for a log line that is written
		return []any{"key", d.ks.key.String(), "handler", h.id, "event", ev.Type.String(), "attempt", ev.Attempt, "id", ev.ID, "took", took}
	}
	b.stats.failed.Add(1)
	var pe *PanicError
	if errors.As(err, &pe) {
		b.stats.panicked.Add(1)
		b.cfg.log.Error("opbus: handler panicked", append(attrs(), "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))...)
	}
	if st.IsZero() {
		st = ErrorStatus(err.Error())
	}
	d.errs = append(d.errs, within(err, "opbus: handler %q on %v", h.id, d.ks.key))
	if _, saved := d.rec.Good[h.id]; !saved && !d.rec.Digests[h.idx].isZero() {
		if d.rec.Good == nil {
			d.rec.Good = Slots{}
		}
		d.rec.Good[h.id], _ = d.rec.Slots.get(h.id) // zero if it had none
	}
	d.putSlot(h.id, st)
	if x := b.extra(d.ks); ev.Type != Delete {
		x.handlers.FellBehind(h.idx, ev.Old)
	}
	d.ks.clean.Set(h.idx, false)
	f := d.rec.Fail(h.id, cur)
	d.dirty = true
	if errors.Is(err, ErrPermanent) {
		b.cfg.log.Error("opbus: handler failed permanently; it runs again when its value changes", append(attrs(), "err", err)...)
		f.Permanent, f.At = true, time.Time{}
		d.ks.handlers().Paid(h.idx)
		return
	}
	delay, asked := backoff.Asked(err)
	if !asked {
		delay = b.cfg.backoff.delay(f.N)
	}
	f.At = b.now().Add(max(delay, time.Nanosecond))
	d.retryAt(f.At)
	b.cfg.log.Error("opbus: handler failed", append(attrs(), "err", err, "retry_in", delay)...)
}

func (b *Bus) isStopping() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopping
}

// filter runs h's When, turning a panic into an error.
func (b *Bus) filter(h *handler, ev *Event) (ok bool, err error) {
	if p := isolate.Call(b.cfg.recover, func() { ok = h.when(ev) }); p != nil {
		return false, fmt.Errorf("On.When: %w", &PanicError{Value: p.Value, Stack: p.Stack})
	}
	return ok, nil
}

// call runs a handler, turning a panic into a *PanicError.
func (b *Bus) call(ctx context.Context, h *handler, ev *Event) (st Status, err error) {
	if p := isolate.Call(b.cfg.recover, func() { st, err = h.fn(ctx, ev) }); p != nil {
		return Status{}, &PanicError{Value: p.Value, Stack: p.Stack}
	}
	return st, err
}

// runDelete runs the delete handlers that have not handled the deletion,
// and reports whether the deletion is finished: every delete handler has
// succeeded or failed for good.
func (b *Bus) runDelete(ctx context.Context, d *pass) bool {
	finished := true
	for _, h := range b.reg.handlers {
		if !h.forKind(d.ks.key.Kind) || !h.wants(Delete) || d.rec.Digests[h.idx] == deletedDigest {
			continue
		}
		if !d.waiting(h, deletedDigest) {
			b.run(ctx, d, h, Delete, deletedDigest, false)
		}
		if d.rec.Digests[h.idx] == deletedDigest {
			continue
		}
		if f := d.rec.Fails[h.id]; f == nil || !f.Permanent {
			finished = false
		}
	}
	return finished
}

func (b *Bus) runCollectors(ctx context.Context, d *pass) {
	for _, c := range b.reg.collectors {
		st := b.collect(ctx, d, c)
		d.putSlot(c.id, st)
	}
}

func (b *Bus) collect(ctx context.Context, d *pass, c *collector) (st Status) {
	if p := isolate.Call(b.cfg.recover, func() { st = c.fn(ctx, d.ks.key, d.new) }); p != nil {
		b.stats.panicked.Add(1)
		b.cfg.log.Error("opbus: collector panicked", "key", d.ks.key.String(), "collector", c.id, "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		return ErrorStatus(fmt.Sprintf("collector %s panicked: %v", c.id, p.Value))
	}
	if err := st.check(); err != nil {
		b.cfg.log.Error("opbus: collector returned a bad status", "key", d.ks.key.String(), "collector", c.id, "err", err)
		st = ErrorStatus(fmt.Sprintf("collector %s returned a bad status: %v", c.id, err))
	}
	return st
}
