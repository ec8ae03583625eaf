package opbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
)

// dispatch is one pass of an observed state through the handlers of its key.
type dispatch struct {
	b     *Bus
	ks    *keyState
	rec   *record
	old   map[string]any // the state before, nil if unknown
	new   map[string]any
	diff  Diff // old → new, computed on first use
	diffd bool
	all   Diff   // nil → new: the whole object as one change, for creates
	id    string // correlation ID, made when a handler first runs
	dirty bool   // rec changed
	errs  []error
	retry time.Duration // shortest retry asked for; 0 for none
}

func (d *dispatch) setValue(name, value string) {
	if d.rec.values[name] == value {
		return
	}
	if value == "" {
		delete(d.rec.values, name)
	} else {
		if d.rec.values == nil {
			d.rec.values = map[string]string{}
		}
		d.rec.values[name] = value
	}
	d.dirty = true
}

func (d *dispatch) setSlot(id string, s Status) error {
	d.b.mu.Lock()
	owner := d.b.owners[id]
	d.b.mu.Unlock()
	if owner != "slot" {
		return fmt.Errorf("opbus: SetSlot(%q): not a slot registered with Bus.Slot", id)
	}
	d.putSlot(id, s)
	return nil
}

func (d *dispatch) putSlot(id string, s Status) {
	if cur, ok := d.rec.slots.Get(id); ok == !s.IsZero() && cur == s {
		return
	}
	if d.rec.slots == nil {
		d.rec.slots = Slots{}
	}
	d.rec.slots.Set(id, s)
	d.dirty = true
}

func (d *dispatch) changes() Diff {
	if !d.diffd {
		d.diffd = true
		if d.old != nil {
			d.diff = d.b.cmp.Compare(d.old, d.new)
		}
	}
	return d.diff
}

func (d *dispatch) correlation() string {
	if d.id == "" {
		d.id = uuid.NewString()
	}
	return d.id
}

// process dispatches one observation of ks. async tells whether failures
// are retried by the bus (Run) or left to the caller (Dispatch).
func (b *Bus) process(ctx context.Context, ks *keyState, o observation, async bool) error {
	b.stats.dispatched.Add(1)
	if err := b.load(ctx, ks); err != nil {
		if async && !errors.Is(err, ErrCorruptRecord) {
			b.retryLater(ks, b.backoff.Delay(1))
			b.requeue(ks, o)
		}
		return err
	}
	d := &dispatch{b: b, ks: ks, rec: ks.rec}
	switch {
	case o.retry:
		d.old, d.new = ks.cur, ks.cur
	case o.hasOld:
		d.old, d.new = o.old, o.new
	default:
		d.old, d.new = ks.cur, o.new
	}
	if o.deleted && o.new == nil {
		d.new = ks.cur
	}
	resume := !ks.seen && !o.hasOld && ks.rec.hasAny()
	ks.seen = true

	if o.deleted || (o.retry && ks.deleting) {
		ks.deleting = true
		ks.cur = d.new
		b.runDelete(ctx, d)
	} else {
		ks.cur = d.new
		ks.deleting = false
		b.runHandlers(ctx, d, resume, o.coalesced)
	}
	if !ks.deleting {
		b.runCollectors(ctx, d)
	}
	if d.rec.pending != nil && !o.retry {
		// A state saved at the last shutdown is superseded by any state
		// dispatched since: this one, or the retries it schedules. If this
		// run stops with work left, Run saves the latest state again.
		d.rec.pending = nil
		d.dirty = true
	}
	b.commit(ctx, d)
	if async && d.retry > 0 {
		b.retryLater(ks, d.retry)
	}
	return errors.Join(d.errs...)
}

// requeue puts an observation back at the head of ks's queue.
func (b *Bus) requeue(ks *keyState, o observation) {
	if o.retry {
		return // the retry timer stands for it
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	ks.queue = append([]observation{o}, ks.queue...)
	b.queued++
}

// load reads the record of ks on first use, and again while it is corrupt
// (so that a repaired record is picked up).
func (b *Bus) load(ctx context.Context, ks *keyState) error {
	if ks.rec != nil {
		return nil
	}
	data, err := b.store.Load(ctx, ks.key)
	if err != nil {
		b.log.Error("opbus: loading record", "key", ks.key.String(), "err", err)
		return fmt.Errorf("opbus: loading record of %v: %w", ks.key, err)
	}
	if data == nil {
		ks.rec = newRecord(len(b.handlers))
		ks.saved = true
		return nil
	}
	rec, err := decodeRecord(ks.key, data, b.index)
	if err != nil {
		b.log.Error("opbus: stored record cannot be read; its handlers wait until it is repaired or deleted", "key", ks.key.String(), "err", err)
		if b.sink != nil {
			msg := err.Error()
			_ = b.sink.PutStatus(ctx, ks.key, ks.cur, Error(msg), Slots{"opbus": Error(msg)})
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
		ks.published = rec.slots.Clone()
	}
	b.mu.Unlock()
	return nil
}

// hasAny reports whether the record holds anything of a handler.
func (r *record) hasAny() bool {
	for _, d := range r.digests {
		if !d.isZero() {
			return true
		}
	}
	return len(r.others) > 0 || len(r.slots) > 0
}

// isClean reports whether handler i's committed digest is that of the
// current state. Handlers past the 64th are never marked: their digest is
// always computed.
func (ks *keyState) isClean(i int) bool {
	return i < 64 && ks.clean&(1<<i) != 0
}

func (ks *keyState) setClean(i int, on bool) {
	switch {
	case i >= 64:
	case on:
		ks.clean |= 1 << i
	default:
		ks.clean &^= 1 << i
	}
}

func (b *Bus) runHandlers(ctx context.Context, d *dispatch, resume, coalesced bool) {
	ks := d.ks
	for _, h := range b.handlers {
		if !h.forKind(ks.key.Kind) {
			continue
		}
		if resume && h.wants(Resume) {
			cur, err := digestOf(b.cmp, d.new, h.fields, "")
			if err != nil {
				d.unusable(h, err)
				continue
			}
			b.run(ctx, d, h, Resume, cur, coalesced)
			continue
		}
		if !h.wants(Create) && !h.wants(Update) {
			continue
		}
		if !h.wants(Update) && !d.rec.digests[h.idx].isZero() {
			continue // created already; its value is no concern of a create-only handler
		}
		// A clean handler's value cannot have changed unless the diff
		// touches its fields: skip the digest.
		if d.old != nil && ks.isClean(h.idx) && !touches(b.cmp, d.changes(), h.fields) {
			continue
		}
		cur, err := digestOf(b.cmp, d.new, h.fields, "")
		if err != nil {
			d.unusable(h, err)
			continue
		}
		stored := d.rec.digests[h.idx]
		if stored == cur {
			ks.setClean(h.idx, true)
			d.recovered(h)
			continue
		}
		ks.setClean(h.idx, false)
		if f, ok := d.rec.failed[h.id]; ok && f == cur {
			continue // failed permanently on this value
		}
		typ := Update
		if stored.isZero() {
			typ = Create
		}
		if !h.wants(typ) {
			// Not this handler's event: take the value as the baseline
			// its next change is measured against.
			d.rec.digests[h.idx] = cur
			d.dirty = true
			ks.setClean(h.idx, true)
			continue
		}
		b.run(ctx, d, h, typ, cur, coalesced)
	}
}

// recovered ends the failure of h when its value is back to the one it
// last handled successfully: nothing is left to do, so its slot shows
// again what that success returned, and no retry is due.
func (d *dispatch) recovered(h *handler) {
	_, retrying := d.rec.retries[h.id]
	_, failed := d.rec.failed[h.id]
	_, saved := d.rec.good[h.id]
	if !retrying && !failed && !saved {
		return
	}
	d.putSlot(h.id, d.rec.good[h.id])
	delete(d.rec.good, h.id)
	delete(d.rec.retries, h.id)
	delete(d.rec.failed, h.id)
	delete(d.ks.behind, h.idx)
	d.dirty = true
}

// unusable reports an object whose subscribed value cannot be digested
// (it holds a value that is not JSON-like): the handler cannot run.
func (d *dispatch) unusable(h *handler, err error) {
	err = fmt.Errorf("opbus: handler %q on %v: %w", h.id, d.ks.key, err)
	d.b.log.Error("opbus: object has an unsupported value", "key", d.ks.key.String(), "handler", h.id, "err", err)
	d.putSlot(h.id, Error(err.Error()))
	d.errs = append(d.errs, err)
}

// event builds the event for h.
func (d *dispatch) event(h *handler, typ EventType, coalesced bool) *Event {
	old := d.old
	changes := d.changes()
	if base, ok := d.ks.behind[h.idx]; ok {
		old = base // the handler failed since: diff from what it last handled
		changes = nil
		if base != nil {
			changes = d.b.cmp.Compare(base, d.new)
		}
	}
	if old == nil && d.new != nil && typ != Delete {
		if d.all == nil {
			d.all = d.b.cmp.Compare(nil, d.new)
		}
		changes = d.all
	}
	if typ == Delete {
		changes = nil
	}
	ev := &Event{
		Type: typ, Key: d.ks.key, Old: old, New: d.new,
		Handler: h.id, Attempt: d.rec.retries[h.id] + 1,
		Coalesced: coalesced, d: d,
	}
	if typ == Delete {
		ev.Old, ev.New = d.new, nil
	}
	ev.Changes = d.b.relevant(changes, h.fields, old, ev.New)
	return ev
}

// run calls h and records its result.
func (b *Bus) run(ctx context.Context, d *dispatch, h *handler, typ EventType, cur digest, coalesced bool) {
	ev := d.event(h, typ, coalesced)
	if h.when != nil && !h.when(ev) {
		d.ks.setClean(h.idx, false)
		return
	}
	ev.ID = d.correlation()
	start := time.Now()
	st, err := b.call(ctx, h, ev)
	took := time.Since(start)
	b.stats.ran.Add(1)
	if b.observer != nil {
		b.observer.Handled(d.ks.key, h.id, ev.Attempt, took, err)
	}
	attrs := func() []any { // built only for a log line that is written
		return []any{"key", d.ks.key.String(), "handler", h.id, "event", typ.String(), "attempt", ev.Attempt, "id", ev.ID, "took", took}
	}
	if err == nil {
		if b.log.Enabled(ctx, slog.LevelDebug) {
			b.log.Debug("opbus: handler succeeded", append(attrs(), "status", st.String())...)
		}
		d.rec.digests[h.idx] = cur
		delete(d.rec.retries, h.id)
		delete(d.rec.failed, h.id)
		delete(d.rec.good, h.id)
		delete(d.ks.behind, h.idx)
		d.ks.setClean(h.idx, typ != Delete)
		d.putSlot(h.id, st)
		d.dirty = true
		return
	}
	b.stats.failed.Add(1)
	var pe *PanicError
	if errors.As(err, &pe) {
		b.stats.panicked.Add(1)
		b.log.Error("opbus: handler panicked", append(attrs(), "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))...)
	}
	if st.IsZero() {
		st = Error(err.Error())
	}
	if _, saved := d.rec.good[h.id]; !saved && !d.rec.digests[h.idx].isZero() {
		if d.rec.good == nil {
			d.rec.good = Slots{}
		}
		d.rec.good[h.id], _ = d.rec.slots.Get(h.id) // zero if it had none
	}
	d.putSlot(h.id, st)
	if d.ks.behind == nil {
		d.ks.behind = map[int]map[string]any{}
	}
	if _, ok := d.ks.behind[h.idx]; !ok {
		d.ks.behind[h.idx] = ev.Old
	}
	d.ks.setClean(h.idx, false)
	d.errs = append(d.errs, fmt.Errorf("opbus: handler %q on %v: %w", h.id, d.ks.key, err))
	if errors.Is(err, ErrPermanent) {
		b.log.Error("opbus: handler failed permanently; it runs again when its value changes", append(attrs(), "err", err)...)
		if d.rec.failed == nil {
			d.rec.failed = map[string]digest{}
		}
		d.rec.failed[h.id] = cur
		delete(d.rec.retries, h.id)
		d.dirty = true
		return
	}
	if d.rec.retries == nil {
		d.rec.retries = map[string]int{}
	}
	d.rec.retries[h.id]++
	d.dirty = true
	delay, asked := retryDelay(err)
	if !asked {
		delay = b.backoff.Delay(d.rec.retries[h.id])
	}
	if d.retry == 0 || delay < d.retry {
		d.retry = max(delay, time.Nanosecond)
	}
	b.log.Error("opbus: handler failed", append(attrs(), "err", err, "retry_in", delay)...)
}

// call runs a handler, turning a panic into a *PanicError.
func (b *Bus) call(ctx context.Context, h *handler, ev *Event) (st Status, err error) {
	if b.recover {
		defer func() {
			if v := recover(); v != nil {
				st, err = Status{}, &PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
	}
	return h.fn(ctx, ev)
}

func (b *Bus) runDelete(ctx context.Context, d *dispatch) {
	for _, h := range b.handlers {
		if !h.forKind(d.ks.key.Kind) || !h.wants(Delete) || d.rec.digests[h.idx] == deletedDigest {
			continue
		}
		b.run(ctx, d, h, Delete, deletedDigest, false)
	}
}

func (b *Bus) runCollectors(ctx context.Context, d *dispatch) {
	for _, c := range b.collectors {
		st := b.collect(ctx, d, c)
		d.putSlot(c.id, st)
	}
}

func (b *Bus) collect(ctx context.Context, d *dispatch, c *collector) (st Status) {
	if b.recover {
		defer func() {
			if v := recover(); v != nil {
				b.stats.panicked.Add(1)
				b.log.Error("opbus: collector panicked", "key", d.ks.key.String(), "collector", c.id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				st = Error(fmt.Sprintf("collector %s panicked: %v", c.id, v))
			}
		}()
	}
	return c.fn(ctx, d.ks.key, d.new)
}

// commit saves the record and publishes the status if they changed, and
// finishes a deletion whose handlers all succeeded.
func (b *Bus) commit(ctx context.Context, d *dispatch) {
	ks := d.ks
	b.dropOrphanSlots(d)
	if ks.deleting && len(d.errs) == 0 {
		b.finishDelete(ctx, d)
		return
	}
	if d.dirty || !ks.saved {
		data, err := d.rec.encode(b.ids)
		if err == nil {
			err = b.store.Save(ctx, ks.key, data)
		}
		ks.saved = err == nil
		if err != nil {
			err = fmt.Errorf("opbus: saving record of %v: %w", ks.key, err)
			b.log.Error("opbus: saving record", "key", ks.key.String(), "err", err)
			d.errs = append(d.errs, err)
			d.retryStore()
		}
	}
	summary := d.rec.slots.Summary()
	b.mu.Lock()
	before := ks.published.Summary()
	changed := !ks.shown || !ks.published.Equal(d.rec.slots)
	if !maps.Equal(ks.values, d.rec.values) {
		ks.values = maps.Clone(d.rec.values)
	}
	if changed {
		ks.published = nil
		if len(d.rec.slots) > 0 {
			ks.published = d.rec.slots.Clone()
		}
		ks.shown = true
	}
	b.mu.Unlock()
	if changed {
		ks.sunk = false
		if summary != before && b.log.Enabled(ctx, slog.LevelInfo) {
			b.log.Info("opbus: status changed", "key", ks.key.String(), "status", summary.String(), "was", before.String())
		}
	}
	if b.sink != nil && !ks.sunk {
		if err := b.sink.PutStatus(ctx, ks.key, ks.cur, summary, d.rec.slots.Clone()); err != nil {
			err = fmt.Errorf("opbus: publishing status of %v: %w", ks.key, err)
			b.log.Error("opbus: publishing status", "key", ks.key.String(), "err", err)
			d.errs = append(d.errs, err)
			d.retryStore()
		} else {
			ks.sunk = true
		}
	}
}

// retryStore asks for a retry after a store or sink failure.
func (d *dispatch) retryStore() {
	delay := d.b.backoff.Delay(1)
	if d.retry == 0 || delay < d.retry {
		d.retry = delay
	}
}

// dropOrphanSlots removes slots that no registered handler, collector or
// slot owns (a handler removed from the program).
func (b *Bus) dropOrphanSlots(d *dispatch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range d.rec.slots {
		if _, ok := b.owners[id]; !ok && id != "opbus" {
			delete(d.rec.slots, id)
			d.dirty = true
			b.log.Info("opbus: dropping the slot of an unregistered handler", "key", d.ks.key.String(), "slot", id)
		}
	}
}

func (b *Bus) finishDelete(ctx context.Context, d *dispatch) {
	ks := d.ks
	if err := b.store.Delete(ctx, ks.key); err != nil {
		d.errs = append(d.errs, fmt.Errorf("opbus: deleting record of %v: %w", ks.key, err))
		d.retryStore()
		return
	}
	if ds, ok := b.sink.(DeleteSink); ok {
		if err := ds.Deleted(ctx, ks.key, d.new); err != nil {
			d.errs = append(d.errs, fmt.Errorf("opbus: reporting deletion of %v: %w", ks.key, err))
			d.retryStore()
			return
		}
	}
	b.log.Debug("opbus: object deleted", slog.String("key", ks.key.String()))
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(ks.queue) == 0 && b.keys[ks.key] == ks {
		delete(b.keys, ks.key)
		// A later observation of the same key starts from nothing.
		ks.rec, ks.cur, ks.seen, ks.clean, ks.behind = nil, nil, false, 0, nil
	} else {
		ks.rec = nil // the record is gone: load afresh
	}
}
