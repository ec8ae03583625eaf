package opbus

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"
)

// busSlot is the slot of the bus's own problems, such as a record that
// cannot be read; no handler may take its name.
const busSlot = "opbus"

// commit saves the record and publishes the status if they changed, and
// finishes a deletion whose handlers are all done.
func (b *Bus) commit(ctx context.Context, d *dispatch, finished bool) {
	ks := d.ks
	b.dropOrphans(d)
	if finished {
		b.toWrite(ctx, ks)
		if l := laneOf(ctx, ks); l != nil {
			l.owed = false // the incarnation's record goes with it
		}
		b.settleOwed(ks)
		b.finishDelete(ctx, d)
		return
	}
	if !b.runsOn(ks.key.Kind) {
		ks.saved, ks.sunk = true, true // nothing to keep: rule 34a
		return
	}
	if l := laneOf(ctx, ks); b.mergesWrite(l, d) {
		// The next pass of the key writes for both (rule 22a). What
		// this one would have written is kept for shutdown, which writes
		// it should the next pass be abandoned (rule 16).
		var err error
		if d.dirty || !ks.saved {
			var data []byte
			if data, err = d.rec.encode(b.ids); err == nil {
				ks.saved = false
				b.mu.Lock()
				if b.owed == nil {
					b.owed = map[*keyState][]byte{}
				}
				b.owed[ks] = data
				b.mu.Unlock()
			}
		}
		if err == nil {
			b.publish(ctx, d, false)
			l.deferred, l.owed = true, true
			b.stats.merged.Add(1)
			return
		}
	}
	b.toWrite(ctx, ks)
	if l := laneOf(ctx, ks); l != nil {
		l.owed = false
	}
	together := false // record and status went in one write (rule 22b)
	if d.dirty || !ks.saved {
		data, err := d.rec.encode(b.ids)
		if err == nil {
			together, err = b.saveStatus(ctx, d, data)
			if !together {
				err = b.save(ctx, ks, data)
			}
		}
		ks.saved = err == nil
		if err != nil {
			what := "saving record"
			if together {
				what = "saving record and status"
			}
			err = fmt.Errorf("opbus: %s of %v: %w", what, ks.key, err)
			b.log.Error("opbus: "+what, "key", ks.key.String(), "err", err)
			d.errs = append(d.errs, err)
			d.storeFailed()
		}
	}
	b.publish(ctx, d, !together)
	if ks.saved {
		b.settleOwed(ks)
	}
	if ks.saved && ks.sunk && ks.x != nil {
		ks.x.storeFails = 0
	}
}

// save writes the record of ks unless shutdown abandoned this pass.
func (b *Bus) save(ctx context.Context, ks *keyState, data []byte) error {
	mu := b.stripe(ks.key)
	mu.Lock()
	defer mu.Unlock()
	if b.dropped(ks) {
		return errAbandoned
	}
	return b.store.Save(ctx, ks.key, data)
}

// saveStatus writes the record data and the status of the pass in one
// write, when the status has to be written and the store can (rule 22b).
// It reports false, having written nothing, otherwise.
func (b *Bus) saveStatus(ctx context.Context, d *dispatch, data []byte) (bool, error) {
	ss, ok := b.store.(StatusStore)
	if !ok || b.sink == nil {
		return false, nil
	}
	ks := d.ks
	b.publish(ctx, d, false) // notes whether the status changed
	if ks.sunk {
		return false, nil
	}
	mu := b.stripe(ks.key)
	mu.Lock()
	defer mu.Unlock()
	if b.dropped(ks) {
		return false, nil // save reports the abandoned pass
	}
	slots := d.rec.slots.clone()
	together, err := ss.SaveStatus(ctx, b.sink, ks.key, data, ks.cur, slots.Summary(), slots)
	if together && err == nil {
		ks.sunk = true
	}
	return together, err
}

// publish records the slots of the pass for Status and, if write is set,
// hands them to the sink if they changed (or an earlier call failed).
func (b *Bus) publish(ctx context.Context, d *dispatch, write bool) {
	ks := d.ks
	summary := d.rec.slots.Summary()
	b.mu.Lock()
	before := ks.published.Summary()
	changed := !ks.shown || !ks.published.equal(d.rec.slots)
	if !maps.Equal(ks.values, d.rec.values) {
		ks.values = maps.Clone(d.rec.values)
	}
	if changed {
		ks.published = nil
		if len(d.rec.slots) > 0 {
			ks.published = d.rec.slots.clone()
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
	if !write {
		return
	}
	if b.sink != nil && !ks.sunk {
		if b.dropped(ks) {
			return // shutdown or a halt took the key from this pass
		}
		if err := b.sink.PutStatus(ctx, ks.key, ks.cur, summary, d.rec.slots.clone()); err != nil {
			err = fmt.Errorf("opbus: publishing status of %v: %w", ks.key, err)
			b.log.Error("opbus: publishing status", "key", ks.key.String(), "err", err)
			d.errs = append(d.errs, err)
			d.storeFailed()
		} else {
			ks.sunk = true
		}
	} else if b.sink == nil {
		ks.sunk = true
	}
}

// storeFailed asks for a retry after a store or sink failure.
func (d *dispatch) storeFailed() {
	if d.storeFail {
		return // a failed save and a failed publish are one failure
	}
	d.storeFail = true
	x := d.b.extra(d.ks)
	// The count grows once per backoff period, not once per pass: during
	// an outage every new state makes a failing pass, and counting each
	// would put the next try minutes after the store is back.
	if now := time.Now(); x.storeFails == 0 || !now.Before(x.storeDue) {
		x.storeFails++
		x.storeDue = now.Add(d.b.backoff.delay(x.storeFails))
	}
	d.retryAt(x.storeDue)
}

// dropOrphans removes what handlers, collectors and slots that are no
// longer registered left in the record: their slots, failures and saved
// slots (their digests were dropped when the record was read).
func (b *Bus) dropOrphans(d *dispatch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range d.rec.slots {
		if _, ok := b.owners[id]; !ok && id != busSlot {
			delete(d.rec.slots, id)
			d.dirty = true
			b.log.Info("opbus: dropping the slot of an unregistered handler", "key", d.ks.key.String(), "slot", id)
		}
	}
	for id := range d.rec.fails {
		if _, ok := b.index[id]; !ok {
			delete(d.rec.fails, id)
			d.dirty = true
		}
	}
	for id := range d.rec.olds {
		if h, ok := b.index[id]; !ok || !b.handlers[h].keepOld {
			delete(d.rec.olds, id)
			d.dirty = true
		}
	}
	for id := range d.rec.good {
		if _, ok := b.index[id]; !ok {
			delete(d.rec.good, id)
			d.dirty = true
		}
	}
}

// finishDelete ends the incarnation of a deleted object: its record is
// deleted and nothing of it is kept.
func (b *Bus) finishDelete(ctx context.Context, d *dispatch) {
	ks := d.ks
	mu := b.stripe(ks.key)
	mu.Lock()
	err := errAbandoned
	quiet := !b.runsOn(ks.key.Kind) // nothing was kept: rule 34a
	if quiet {
		err = nil
	} else if !b.dropped(ks) {
		err = b.store.Delete(ctx, ks.key)
	}
	mu.Unlock()
	if err != nil {
		d.errs = append(d.errs, fmt.Errorf("opbus: deleting record of %v: %w", ks.key, err))
		d.storeFailed()
		return
	}
	if ds, ok := b.sink.(DeleteSink); ok && !quiet {
		if err := ds.Deleted(ctx, ks.key, d.new); err != nil {
			d.errs = append(d.errs, fmt.Errorf("opbus: reporting deletion of %v: %w", ks.key, err))
			d.storeFailed()
			return
		}
	}
	b.log.Debug("opbus: object deleted", slog.String("key", ks.key.String()))
	inc := d.rec.inc
	ks.rec, ks.cur, ks.live, ks.deleting = nil, nil, false, false
	ks.clean, ks.ended, ks.sunk, ks.saved = 0, true, true, true
	b.mu.Lock()
	if ks.x != nil || inc != "" {
		x := ks.extraLocked()
		x.behind, x.resumeOwed, x.storeFails, x.loadFails = nil, nil, 0, 0
		x.endedInc = inc
	}
	ks.published, ks.values, ks.shown = nil, nil, true
	ks.stopTimer()
	b.mu.Unlock()
}
