package opbus

import (
	"context"

	"github.com/opbus/opbus/internal/wake"
	"github.com/opbus/opbus/internal/writeq"
)

// Under Run, a pass runs its handlers in one of Options.Workers handler
// slots and writes its record and status in one of Options.Writers write
// slots (rule 22a): a slow store or API server holds a write slot, not a
// handler worker. The key stays held until its write returns, so a value is
// handled only once its record is durable and a key's passes stay in order.

// lanes is what a Bus keeps of Run's goroutines and the write stage;
// guarded by Bus.mu except where noted.
type lanes struct {
	handling   int                                              // passes holding a handler slot
	workTok    wake.Token                                       // a ready key and a free handler slot may be there (wakeup.go)
	writeSem   writeq.Slots                                     // the write slots: one element per write under way (wakeup.go)
	flying     map[*keyState]observation                        // the state each busy key is dispatching, for shutdown
	owed       map[*keyState][]byte                             // the record a merged pass left to the next pass's write
	parked     writeq.Parking[*keyState, *writeJob, statusSnap] // busy keys that no lane holds while their write runs (pipeline.go)
	writeCost  writeq.Cost                                      // the average time of a write (pipeline.go); atomic
	pipeAlways bool                                             // tests: every write of Run's passes runs beside the next pass
}

// lane is what one of Run's goroutines holds. The goroutine's loop
// (passes) owns it: each pass it makes of its key returns its write to
// the loop, which asks the key's write cycle where it goes and places it
// there (place): merged into the next pass, queued behind the write in
// flight, beside the next pass, or made inline. A lane is the
// writeq.Owner of its writes: writeq.Loop keeps their order.
type lane struct {
	ks       *keyState // the key of its pass; nil between passes
	handling bool      // holds a handler slot
	// writes is the key's write cycle: its write in flight beside this
	// pass, if any (pipeline.go); what it owes its next write (merged,
	// or queued behind the one in flight, rule 22c), with the passes
	// since the last write began and the statuses of the passes queued
	// behind it, for the sink (statusSnap); the passes the lane made of
	// it (cycleLimits); and whether Bus.flying keeps the state of its
	// last pass while its write is owed or under way (Kept). With it,
	// whether the lane holds a write slot.
	writes writeq.Loop[*writeJob, statusSnap]
	bus    *Bus // whose lane it is
}

// Lock locks Bus.mu.
func (l *lane) Lock() { l.bus.mu.Lock() }

// Unlock unlocks Bus.mu.
func (l *lane) Unlock() { l.bus.mu.Unlock() }

// TakeIn takes in the outcome of w, a write of the lane's key that it
// joined (takeIn).
func (l *lane) TakeIn(w *writeJob) { l.bus.takeIn(w) }

// maxMerged bounds the passes of one key whose writes go as one.
const maxMerged = 8

// maxTaken bounds the passes one goroutine of Run makes of a key before
// it lets the key go, so that a Dispatch call waiting for a key whose
// states keep coming while its writes are under way gets its turn.
const maxTaken = 64

// cycleLimits are the bounds of a key's write cycle (rules 22a and 22c).
var cycleLimits = writeq.Limits{Merged: maxMerged, Queued: maxQueued, Taken: maxTaken}

// place places w, the write of the pass that holds lane l, where the
// key's write cycle routes it (writeq.Cycle.Route): owed to the next pass
// of the key (rule 22a) or to the write after the one in flight (rule
// 22c), made beside the next pass (rule 22c), or made inline. loop says
// that the lane goes on with the key after this write; flush that the
// write is the one the key owes, which no pass came to carry. It reports
// whether the pass left its write to the next pass.
func (b *Bus) place(ctx context.Context, l *lane, w write, loop, flush bool) bool {
	d := w.d
	switch {
	case w.none:
		return false
	case w.ends:
		l.writes.ToWrite(l, b.lanes.writeSem)
		l.writes.Backlog.Forgive() // the incarnation's record goes with it
		b.writeNow(ctx, w)
		return false
	}
	b.mu.Lock()
	f := writeq.Facts{Loop: loop, Slow: b.pipelines(), Flush: flush, Failed: d.storeFail, Stopping: b.stopping, Ready: b.runnable(d.ks)}
	r := l.writes.Route(f)
	b.mu.Unlock()
	if r.Owes() {
		if b.owe(ctx, d, l) {
			if r == writeq.Merge {
				b.stats.merged.Add(1)
			} else {
				b.noteQueuedStatus(l, d)
			}
			return r == writeq.Merge
		}
		r = f.Now() // its record cannot be encoded: the write reports it now
	}
	if r == writeq.Inline {
		l.writes.ToWrite(l, b.lanes.writeSem)
		b.writeInline(ctx, d, l.writes.Backlog.Take()) // this write carries what was owed
		return false
	}
	// The write before, if under way, goes first: this pass may not
	// queue its write (shutdown, or a failed pass).
	l.writes.JoinFree(l)
	if j := new(writeJob); b.prepareWrite(ctx, d, l.writes.Backlog.Take(), j) {
		b.writeBeside(ctx, l, j) // rule 22c
	} else {
		b.afterWrite(d.ks)
	}
	return false
}

// owe leaves the write of the pass d, in lane l, to a later one: to the
// next pass of its key, which is queued (rule 22a), or to the write after
// the one under way (rule 22c). What it would have written is kept for
// shutdown, which writes it should the pass that owes it be abandoned
// (rule 16). It reports false, owing nothing, if the record cannot be
// encoded: the pass then writes at once and reports that.
func (b *Bus) owe(ctx context.Context, d *pass, l *lane) bool {
	ks := d.ks
	// With a write under way the store may not get its record: keep it
	// whatever the pass changed.
	if d.dirty || !ks.saved || l.writes.InFlight() {
		data, err := d.rec.encode(b.reg.ids)
		if err != nil {
			return false
		}
		if d.dirty || !ks.saved {
			ks.saved = false
		}
		b.mu.Lock()
		if b.lanes.owed == nil {
			b.lanes.owed = map[*keyState][]byte{}
		}
		b.lanes.owed[ks] = data
		b.mu.Unlock()
	}
	b.publish(ctx, d)
	l.writes.Backlog.Owe()
	return true
}

// FreeHandler gives back the handler slot l holds, if it does; Bus.mu is
// held.
func (l *lane) FreeHandler() {
	if l.handling {
		l.handling = false
		l.bus.lanes.handling--
		l.bus.offerWork()
	}
}

// leave gives back the slots l holds; b.mu is held.
func (b *Bus) leave(l *lane) {
	l.FreeHandler()
	l.writes.Leave(b.lanes.writeSem)
}

// runnable reports whether a queued state of ks may be dispatched now by
// a lane; b.mu is held.
func (b *Bus) runnable(ks *keyState) bool {
	return b.q.kq.Runnable(ks) && b.owns(ks.key)
}

// flush writes what the passes of ks in lane l left to a next pass that
// did not come (its state went aside, or its record could not be read);
// loop says that the lane goes on with ks after it (see place).
func (b *Bus) flush(ctx context.Context, l *lane, ks *keyState, loop bool) {
	if ks.rec == nil {
		return
	}
	d := &pass{b: b, ks: ks, rec: ks.rec}
	b.place(ctx, l, b.commit(d, false), loop, true)
	b.mu.Lock()
	if !d.due.IsZero() {
		b.retryAt(ks, d.due)
	}
	b.mu.Unlock()
}

// settleOwed forgets the record a merged pass of ks left to a later write,
// once that write is made or no longer due.
func (b *Bus) settleOwed(ks *keyState) {
	b.mu.Lock()
	delete(b.lanes.owed, ks)
	b.mu.Unlock()
}
