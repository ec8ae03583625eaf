package opbus

import (
	"context"
	"fmt"

	stored "github.com/opbus/opbus/internal/record"
)

// Finished deletions outlive the process that finished them. When every
// delete handler of an incarnation has run, the bus does not delete the
// key's record: it saves a tombstone in its place, a record that holds the
// incarnation and when its deletion finished (internal/record, version 4).
// A bus that reads a tombstone knows the deletion is finished, as the bus
// that finished it does (rule 14 of docs/semantics.md), so a deletion
// observed again by a new process runs no handler; the first such
// deletion it drops is handed to the DeleteSink once more (a finalizer
// that a crash left behind goes). A new incarnation, or a state observed
// after the deletion, replaces the tombstone with a record of its own.
//
// A tombstone lasts [stored.TombstoneTTL] (a day): an older one is a
// record that is not there (Record.Expired), deleted when the bus reads
// it (at the start of Run, which reads every stored record, or when its
// key is observed again).

// tombstone returns the record that replaces the record of an incarnation
// inc whose deletion has just finished.
func (b *Bus) tombstone(inc string) ([]byte, error) {
	r := record{stored.Tombstone[digest, Slots, *schedule](inc, b.now())}
	return r.encode(nil)
}

// dropTombstone deletes the expired tombstone of key, under the key's
// stripe lock; a key that is being dispatched is left to its pass.
func (b *Bus) dropTombstone(ctx context.Context, key Key) error {
	mu := b.stripe(key)
	mu.Lock()
	defer mu.Unlock()
	rec, err := b.readRecord(ctx, key, b.reg.index)
	if err != nil || rec == nil || !rec.Expired(b.now()) {
		return err
	}
	if err := b.cfg.store.Delete(ctx, key); err != nil {
		return fmt.Errorf("opbus: deleting the expired tombstone of %v: %w", key, err)
	}
	return nil
}

// loadedTombstone takes rec, a tombstone read for ks, as the memory of a
// finished deletion: ks is ended, and the record keeps the tombstone until
// a state of a new incarnation replaces it. An expired tombstone is no
// record at all. ks.ended already set means this bus finished the
// deletion itself and handed it to the sink, or forgot the key since it
// read the tombstone, keeping what it owed the sink.
func (b *Bus) loadedTombstone(ks *keyState, rec *record) {
	if rec.Expired(b.now()) {
		ks.rec, ks.saved = newRecord(len(b.reg.handlers)), true // as if there were none
		return
	}
	ks.rec, ks.saved = rec, true
	b.mu.Lock()
	x := ks.extraLocked()
	x.endedInc, x.sinkOwed = rec.Inc, x.sinkOwed || !ks.ended // an owed call stays owed
	ks.ended = true
	b.mu.Unlock()
}

// afterTombstone starts a record for a state observed after ks's
// tombstone: nothing of the ended incarnation is kept.
func (b *Bus) afterTombstone(ks *keyState) {
	ks.rec, ks.saved = newRecord(len(b.reg.handlers)), false
	if ks.x != nil {
		ks.x.sinkOwed = false
	}
}

// repeatDeleted hands a deletion dropped as a repeat to the DeleteSink
// when the deletion was finished by an earlier process, whose sink may not
// have heard of it.
func (b *Bus) repeatDeleted(ctx context.Context, ks *keyState, o *observation) error {
	ds, ok := b.cfg.sink.(DeleteSink)
	if !ok || ks.x == nil || !ks.x.sinkOwed || !o.deleted {
		return nil
	}
	if o.inc != "" && o.inc != ks.x.endedInc {
		return nil // a deletion of another incarnation: not the one the sink may owe
	}
	if err := ds.Deleted(ctx, ks.key, o.new); err != nil {
		return fmt.Errorf("opbus: reporting deletion of %v: %w", ks.key, err)
	}
	ks.x.sinkOwed = false
	return nil
}
