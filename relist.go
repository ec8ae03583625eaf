package opbus

import (
	"context"
	"time"

	"github.com/opbus/opbus/internal/relist"
)

// The relist: after a restart, the source observes every object again (an
// informer's first list), in no fixed order. A handler that reads related
// objects has, in its object's record, the digest of the value it last
// handled: the object's own fields and the sums of the view (view.go).
// When the object is observed before some of its related objects, the
// view is partial and the value differs; run then, the handler would run
// again once they are observed. So, while the relist lasts, such a
// handler whose value differs from the one it handled waits; its value
// back to that one (the view whole again), the object waits no more. The
// relist ends when the source says so (Bus.Synced) or, under Run, when
// nothing was observed for relistQuiet and nothing is queued: each object
// still waiting then gets a pass, in which those handlers run once on the
// view as it is, without the related objects deleted while no bus ran.
//
// The digests are all the record needs for it: naming each related object
// in it (the record's related member) would make every write of an object
// with many related objects as large as their number (rule 33).

// relistQuiet is how long Run waits, without an observation and with
// nothing queued, before it ends the relist of a source that does not call
// Bus.Synced.
const relistQuiet = 2 * time.Second

// relistLongest bounds the relist of a source that does not call
// Bus.Synced and is never quiet (a steady stream of observations): Run
// ends it this long after it began at the latest, so that no handler
// waits for it for ever.
const relistLongest = 30 * time.Second

// Synced tells the bus that its source has observed every existing object
// at least once since the bus was made: for a Kubernetes informer, that its
// cache has synced. Until then, under Run, a handler that reads related
// objects and handled a value of an object before the restart does not
// run on a value that differs from it, which may be a view with related
// objects not observed yet (docs/semantics.md rule 34); from then, it runs
// on the view as it is: a related object not observed by then was deleted
// while no bus ran. A source that never calls Synced gets the same once
// Run has been quiet for a while (no observation and nothing queued for
// two seconds), or 30 seconds after Run began at the latest. Calls after the first do nothing, and so does a call on a
// bus without relations.
func (b *Bus) Synced() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endRelist()
}

// endRelist ends the relist: every object still waiting gets a change of
// no related object, a pass in which its handlers that read related
// objects run if their value differs; b.mu is held.
func (b *Bus) endRelist() {
	if b.rel == nil {
		return
	}
	for _, key := range b.rel.relist.End() {
		ks := b.q.keys[key]
		if ks == nil || b.stopping {
			continue // forgotten (its incarnation ended), or nothing more runs
		}
		// A change whose child is the object itself changes nothing in
		// its view: no object relates to itself (relatedTo).
		b.push(ks, observation{rel: []relChange{{Child: key}}})
	}
}

// endRelistWhenQuiet ends the relist, under Run, once no object was
// observed for relistQuiet and nothing is pending (queued, being handled,
// or the store being listed for pending states), or relistLongest after it
// began at the latest; it returns when ctx ends or the relist has ended.
func (b *Bus) endRelistWhenQuiet(ctx context.Context) {
	relist.Watch(ctx, relistQuiet, relistLongest, b.stats.observed.Load, func(still, late bool) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		if (still && b.q.kq.Pending() == 0) || late {
			b.endRelist()
		}
		return b.rel.relist.Ended()
	})
}

// waitForRelist, for ks whose record was just loaded, makes ks wait for
// the relist to end if a handler that reads related objects has handled a
// value of it: until then, such a handler runs only if its value is back
// to the one it handled (then the view is whole again and ks waits no
// more). Only under Run, while the relist lasts.
func (b *Bus) waitForRelist(ks *keyState) {
	if b.rel == nil || ks.rec.EndedAt() != 0 || !b.readsRelated(ks.key.Kind, ks.rec) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running && !b.stopping {
		b.rel.relist.Wait(ks.key)
	}
}

// differsInRelist reports whether h, which reads related objects, waits
// for the relist to end in the pass d of an object that waits for it: its
// value differs from the one it handled, which may be a view still
// partial. A handler that handled nothing yet does not wait: nothing it
// handled could run again.
func (b *Bus) differsInRelist(d *pass, h *handler) bool {
	stored := d.rec.Digests[h.idx]
	if stored.isZero() {
		return false
	}
	cur, err := b.digestFor(d, h)
	return err == nil && cur != stored
}

// relistWaitOver notes that key waits for the relist no more.
func (b *Bus) relistWaitOver(key Key) {
	b.mu.Lock()
	b.rel.relist.Over(key)
	b.mu.Unlock()
}
