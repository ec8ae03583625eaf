package opbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
)

// busSlot is the slot of the bus's own problems, such as a record that
// cannot be read; no handler may take its name.
const busSlot = "opbus"

// write is what a pass leaves the loop that owns its key to write, once
// its handlers have returned: the pass itself (its record, dirty or not
// yet saved, and its slots, the status) and whether its incarnation ends.
// Whether the record still needs saving and the status publishing is
// known only when the write is made (a write before it may have failed),
// so the write carries the pass, not a copy. The loop decides where it
// goes: Run's lane loop (passes) may owe it to the next pass, queue it
// behind the write in flight, or make it beside or inline; a Dispatch or
// Wait call makes it inline (writeNow).
type write struct {
	d    *pass // nil: no pass ran, nothing to write
	ends bool  // a finished deletion: a tombstone replaces the record
	none bool  // nothing is kept of the kind (rule 34a)
}

// commit returns what the pass d must write: its record and status, or,
// finished, the end of its deleted incarnation.
func (b *Bus) commit(d *pass, finished bool) write {
	b.dropOrphans(d)
	if !finished && !b.runsOn(d.ks.key.Kind) {
		d.ks.saved, d.ks.sunk = true, true // nothing to keep: rule 34a
		return write{d: d, none: true}
	}
	return write{d: d, ends: finished}
}

// writeNow makes w inline, in the caller's goroutine: the write of a
// Dispatch or Wait call's pass, or of a lane's once it left the lane's
// write cycle.
func (b *Bus) writeNow(ctx context.Context, w write) {
	d := w.d
	switch {
	case w.none:
	case w.ends:
		b.settleOwed(d.ks)
		b.finishDelete(ctx, d)
	default:
		b.writeInline(ctx, d, nil)
	}
}

// writeInline makes the write of the pass d in the caller's goroutine,
// after before, the statuses of the passes queued behind the write
// before it.
func (b *Bus) writeInline(ctx context.Context, d *pass, before []statusSnap) {
	var j writeJob // need not be on the heap: every pass of the memory store makes one
	if b.prepareWrite(ctx, d, before, &j) {
		(*stage)(b).Make(ctx, &j)
		b.finishWrite(&j)
	} else {
		b.afterWrite(d.ks)
	}
}

// closePass ends the pass d once its write was placed: its schedules are
// armed, its key's queue blocked while its deletion is unfinished, the
// retry it asks for armed; it returns the pass's errors.
func (b *Bus) closePass(d *pass) error {
	ks := d.ks
	if b.reg.periodic || ks.rec == nil || ks.rec.Timers() != nil || ks.x != nil {
		b.armTick(ks, d.now) // schedules (timer.go)
	}
	b.mu.Lock()
	b.q.kq.Block(ks, ks.deleting)
	if !d.due.IsZero() {
		b.retryAt(ks, d.due)
	}
	b.mu.Unlock()
	return errors.Join(d.errs...)
}

// saveRecord saves data, which the bus never modifies once encoded, as
// the record of key; the embedded store keeps it without a copy.
func (b *Bus) saveRecord(ctx context.Context, key Key, data []byte) error {
	if ms, ok := b.cfg.store.(*MemoryStore); ok {
		return ms.keep(ctx, key, data)
	}
	return b.cfg.store.Save(ctx, key, data)
}

// stage is the Bus as its write stage: the store of its writes
// (writeq.Store, for writeq.Make) and the maker of those that go beside
// the next pass of their key (writeq.Writer, pipeline.go).
type stage Bus

// Dropped reports whether shutdown or a halt took ks from its pass.
func (s *stage) Dropped(ks *keyState) bool { return (*Bus)(s).dropped(ks) }

// Stripe returns the stripe lock of ks, which writeq.Make holds while it
// saves the record, so that shutdown's and a halt's writes order with it.
func (s *stage) Stripe(ks *keyState) sync.Locker { return (*Bus)(s).stripe(ks.key) }

// Save writes the record of ks unless shutdown abandoned its pass; the
// key's stripe is held.
func (s *stage) Save(ctx context.Context, ks *keyState, data []byte) error {
	if s.Dropped(ks) {
		return errAbandoned
	}
	return (*Bus)(s).saveRecord(ctx, ks.key, data)
}

// SaveWithStatus saves the record and status of ks as one write when the
// store can (rule 22b); the key's stripe is held. It reports false,
// having written nothing, otherwise.
func (s *stage) SaveWithStatus(ctx context.Context, ks *keyState, data []byte, st statusSnap) (bool, error) {
	ss, ok := s.cfg.store.(StatusStore)
	if !ok || s.Dropped(ks) {
		return false, nil // if dropped, Save reports the abandoned pass
	}
	return ss.SaveStatus(ctx, s.cfg.sink, ks.key, data, st.cur, st.summary, st.slots)
}

// PutStatus hands a status of ks to the sink.
func (s *stage) PutStatus(ctx context.Context, ks *keyState, st statusSnap) error {
	return s.cfg.sink.PutStatus(ctx, ks.key, st.cur, st.summary, st.slots)
}

// BeforeFailed logs a status queued beside a write that the sink refused.
func (s *stage) BeforeFailed(ks *keyState, st statusSnap, err error) {
	s.cfg.log.Error("opbus: publishing a status queued beside a write", "key", ks.key.String(), "status", st.summary.String(), "err", err)
}

// publish records the slots of the pass for Status and notes, by
// clearing ks.sunk, that they changed since the sink last got them; the
// write of the pass hands them to the sink (pipeline.go).
func (b *Bus) publish(ctx context.Context, d *pass) {
	ks := d.ks
	summary := d.rec.Slots.Summary()
	b.mu.Lock()
	before := ks.published.Summary()
	changed := !ks.shown || !ks.published.equal(d.rec.Slots)
	if !maps.Equal(ks.values, d.rec.Values) {
		ks.values = maps.Clone(d.rec.Values)
	}
	if changed {
		ks.published = nil
		if len(d.rec.Slots) > 0 {
			ks.published = d.rec.Slots.clone()
		}
		ks.shown = true
	}
	b.mu.Unlock()
	if changed {
		ks.sunk = false
		if summary != before && b.cfg.log.Enabled(ctx, slog.LevelInfo) {
			b.cfg.log.Info("opbus: status changed", "key", ks.key.String(), "status", summary.String(), "was", before.String())
		}
	}
}

// storeFailed asks for a retry after a store or sink failure.
func (d *pass) storeFailed() {
	if d.storeFail {
		return // a failed save and a failed publish are one failure
	}
	d.storeFail = true
	x := d.b.extra(d.ks)
	// The count grows once per backoff period, not once per pass: during
	// an outage every new state makes a failing pass, and counting each
	// would put the next try minutes after the store is back.
	if now := d.b.now(); x.storeFails == 0 || !now.Before(x.storeDue) {
		x.storeFails++
		x.storeDue = now.Add(d.b.cfg.backoff.delay(x.storeFails))
	}
	d.retryAt(x.storeDue)
}

// dropOrphans removes what handlers, collectors and slots that are no
// longer registered left in the record: their slots, failures and saved
// slots (their digests were dropped when the record was read).
func (b *Bus) dropOrphans(d *pass) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range d.rec.Slots {
		if _, ok := b.reg.owners[id]; !ok && id != busSlot {
			delete(d.rec.Slots, id)
			d.dirty = true
			b.cfg.log.Info("opbus: dropping the slot of an unregistered handler", "key", d.ks.key.String(), "slot", id)
		}
	}
	for id := range d.rec.Fails {
		if _, ok := b.reg.index[id]; !ok {
			delete(d.rec.Fails, id)
			d.dirty = true
		}
	}
	for id := range d.rec.Olds {
		if h, ok := b.reg.index[id]; !ok || !b.reg.handlers[h].keepOld {
			delete(d.rec.Olds, id)
			d.dirty = true
		}
	}
	for id := range d.rec.Good {
		if _, ok := b.reg.index[id]; !ok {
			delete(d.rec.Good, id)
			d.dirty = true
		}
	}
}

// finishDelete ends the incarnation of a deleted object: its record is
// replaced by a tombstone (tombstone.go) and nothing of it is kept.
func (b *Bus) finishDelete(ctx context.Context, d *pass) {
	ks := d.ks
	mu := b.stripe(ks.key)
	mu.Lock()
	err := errAbandoned
	quiet := !b.runsOn(ks.key.Kind) // nothing was kept: rule 34a
	if quiet {
		err = nil
	} else if !b.dropped(ks) {
		var tomb []byte
		if tomb, err = b.tombstone(d.rec.Inc); err == nil {
			err = b.cfg.store.Save(ctx, ks.key, tomb) // tombstone.go
		}
	}
	mu.Unlock()
	if err != nil {
		d.errs = append(d.errs, fmt.Errorf("opbus: deleting record of %v: %w", ks.key, err))
		d.storeFailed()
		return
	}
	if ds, ok := b.cfg.sink.(DeleteSink); ok && !quiet {
		if err := ds.Deleted(ctx, ks.key, d.new); err != nil {
			d.errs = append(d.errs, fmt.Errorf("opbus: reporting deletion of %v: %w", ks.key, err))
			d.storeFailed()
			return
		}
	}
	b.cfg.log.Debug("opbus: object deleted", slog.String("key", ks.key.String()))
	inc := d.rec.Inc
	ks.rec, ks.cur, ks.live, ks.deleting = nil, nil, false, false
	ks.clean, ks.ended, ks.sunk, ks.saved = 0, true, true, true
	b.mu.Lock()
	if ks.x != nil || inc != "" {
		x := ks.extraLocked()
		x.handlers.Reset()
		x.storeFails, x.loadFails = 0, 0
		x.endedInc = inc
	}
	ks.published, ks.values, ks.shown = nil, nil, true
	b.q.kq.StopRetry(ks) // disarms the retry timer, forgets a due retry
	b.mu.Unlock()
}
