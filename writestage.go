package opbus

import (
	"context"

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
	workTok    chan struct{}                                    // a ready key and a free handler slot may be there (wakeup.go)
	writeSem   writeq.Slots                                     // the write slots: one element per write under way (wakeup.go)
	flying     map[*keyState]observation                        // the state each busy key is dispatching, for shutdown
	owed       map[*keyState][]byte                             // the record a merged pass left to the next pass's write
	parked     writeq.Parking[*keyState, *writeJob, statusSnap] // busy keys that no lane holds while their write runs (pipeline.go)
	writeCost  writeq.Cost                                      // the average time of a write (pipeline.go); atomic
	pipeAlways bool                                             // tests: every write of Run's passes runs beside the next pass
}

// lane is what one of Run's goroutines holds. The goroutine's loop
// (passes) owns it and hands it, as an argument, to each pass it makes of
// its key down to the pass's commit, which leaves its write to the
// lane: merged into the next pass, beside it, or made inline.
type lane struct {
	ks       *keyState // the key of its pass; nil between passes
	handling bool      // holds a handler slot
	writing  bool      // holds a write slot
	// merge lets this pass leave its write to the next pass of its key,
	// which is queued (rule 22a); deferred says it did.
	merge, deferred bool
	// writes is the key's write in flight beside this pass, if any
	// (pipeline.go), and what the key owes its next write: whether a
	// write is still to be made (merged, or queued behind the one in
	// flight, rule 22c), the passes since the last write began
	// (maxMerged, maxQueued), and the statuses of the passes queued
	// behind it, for the sink (statusSnap).
	writes writeq.Key[*writeJob, statusSnap]
	// taken counts the passes since the lane took the key (maxTaken).
	taken int
	// pipe lets this pass write beside the next pass of its key.
	pipe bool
	// flying says that Bus.flying keeps the state of the key's last pass
	// while its write is owed or under way.
	flying bool
}

// maxMerged bounds the passes of one key whose writes go as one.
const maxMerged = 8

// maxTaken bounds the passes one goroutine of Run makes of a key before
// it lets the key go, so that a Dispatch call waiting for a key whose
// states keep coming while its writes are under way gets its turn.
const maxTaken = 64

// toWrite moves the pass in lane l (nil for none: nothing to move)
// from its handler slot to a write slot, waiting for one while
// Options.Writers writes are under way.
func (b *Bus) toWrite(l *lane) {
	if l == nil {
		return
	}
	b.joinFree(l)
	if l.writing {
		return
	}
	b.mu.Lock()
	b.freeHandler(l)
	b.mu.Unlock()
	b.lanes.writeSem.Take()
	l.writing = true
}

// freeHandler gives back the handler slot l holds, if it does; b.mu is
// held.
func (b *Bus) freeHandler(l *lane) {
	if l.handling {
		l.handling = false
		b.lanes.handling--
		b.offerWork()
	}
}

// leave gives back the slots l holds; b.mu is held.
func (b *Bus) leave(l *lane) {
	b.freeHandler(l)
	if l.writing {
		l.writing = false
		b.lanes.writeSem.Free()
	}
}

// mergesWrite reports whether the pass d, which holds lane l, leaves its
// write to the next pass of its key: one is queued and may be taken now,
// and the bus is not stopping.
func (b *Bus) mergesWrite(l *lane, d *pass) bool {
	if l == nil || !l.merge || d.storeFail {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.stopping && b.runnable(d.ks)
}

// runnable reports whether a queued state of ks may be dispatched now by
// a lane; b.mu is held.
func (b *Bus) runnable(ks *keyState) bool {
	return b.q.kq.Runnable(ks) && b.owns(ks.key)
}

// flush writes what the passes of ks in lane l left to a next pass that
// did not come (its state went aside, or its record could not be read).
func (b *Bus) flush(ctx context.Context, l *lane, ks *keyState) {
	if ks.rec == nil {
		return
	}
	d := &pass{b: b, ks: ks, rec: ks.rec}
	b.commit(ctx, l, d, false)
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
