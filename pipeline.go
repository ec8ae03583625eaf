package opbus

import (
	"context"
	"fmt"
	"time"

	"github.com/opbus/opbus/internal/writeq"
)

// Under Run, the write of a pass can run beside the next pass of its key
// (rule 22c): when a state of the key arrives while its record is being
// written, its handlers run at once. At most one write of a key is under
// way: a pass that ends while it is queues its write behind the one under
// way until it returns (writeq.Behind), later passes merge into that one
// (rule 22a), and the write
// after carries the latest record and status. A value still counts as
// handled only once its record is durable, and a key's writes stay in
// order: a pass takes in the outcome of the write before it (join) before
// it writes its own. The key stays busy throughout, held by a lane or
// parked on its write (park), so retries, shutdown, halts, Wait and
// Dispatch see it busy, as during any pass; the state of a pass whose
// write is owed or under way stays in Bus.flying for shutdown.

// maxQueued bounds the passes of a key that queue their write while one is
// under way: more than maxMerged, since a write to a saturated API server
// can take as long as eight of the key's states (a handler still runs at
// most once more per value after a crash, whatever the number).
const maxQueued = 64

// pipeAfter is the average write time from which Run's passes write beside
// the next pass: below it, a write is cheaper than handing it over to a
// goroutine of its own.
const pipeAfter = 100 * time.Microsecond

// writeJob is the write of one pass's record and status, holding what it
// needs of the pass so that it can run while the next pass changes the
// key's record.
type writeJob struct {
	d      *pass
	w      writeq.Write[statusSnap] // the record, the status and the statuses of queued passes, and what the write did
	flight writeq.Flight            // of a job run beside the next pass; Finished under Bus.mu
}

// pipelines reports whether a write of a lane's pass goes beside the next
// pass: writes have been slow enough to be worth it.
func (b *Bus) pipelines() bool {
	return b.lanes.pipeAlways || b.lanes.writeCost.AtLeast(pipeAfter)
}

// statusSnap is a status that a pass queued behind a write (writeq.Behind)
// published: the sink gets it, in order, before the status of the write
// that carries the pass's record, so that no level a handler reported is
// skipped (Kubernetes Events count each change of level).
type statusSnap struct {
	cur     map[string]any
	summary Status
	slots   Slots
}

// noteQueuedStatus notes the status of the queued pass d, if it changed, for the
// write that follows (at most maxQueued of them).
func (b *Bus) noteQueuedStatus(l *lane, d *pass) {
	if b.cfg.sink == nil || d.ks.sunk {
		return
	}
	if last, ok := l.writes.Backlog.Last(); ok && last.slots.equal(d.rec.Slots) {
		return // no clone for a status kept already
	}
	l.writes.Backlog.Note(statusSnap{d.ks.cur, d.rec.Slots.Summary(), d.rec.Slots.clone()}, sameStatus)
}

// sameStatus reports whether two queued statuses are one level.
func sameStatus(a, b statusSnap) bool { return a.slots.equal(b.slots) }

// prepareWrite notes the pass's status and fills w with the write its
// record and status need; before are the statuses of queued passes not
// yet given to the sink. It reports whether there is anything to write,
// and marks the record saved and the status sunk, as they will be unless
// the write fails (finishWrite). w is the caller's, so that a write made
// inline need not be on the heap (writeInline).
func (b *Bus) prepareWrite(ctx context.Context, d *pass, before []statusSnap, w *writeJob) bool {
	ks := d.ks
	w.d = d
	if d.dirty || !ks.saved {
		data, err := d.rec.encode(b.reg.ids)
		if err != nil {
			ks.saved = false
			b.writeFailed(d, "saving record", err)
		} else {
			w.w.Record = data
			ks.saved = true
		}
	}
	b.publish(ctx, d) // notes whether the status changed
	switch {
	case b.cfg.sink == nil:
		ks.sunk = true
	case !ks.sunk:
		w.w.Carry(statusSnap{ks.cur, d.rec.Slots.Summary(), d.rec.Slots.clone()}, before, sameStatus)
		ks.sunk = true
	}
	return w.w.Record != nil || w.w.Put
}

// Make makes the write of w: the record and status in one write when the
// store can (rule 22b), else the record, then the status.
func (s *stage) Make(ctx context.Context, w *writeJob) {
	start := time.Now()
	writeq.Make(ctx, s, w.d.ks, &w.w)
	s.lanes.writeCost.Add(time.Since(start))
}

// finishWrite takes in the outcome of w: a failed write leaves the record
// unsaved or the status unsunk, reports it, and asks for a retry.
func (b *Bus) finishWrite(w *writeJob) {
	d, ks := w.d, w.d.ks
	r := &w.w
	if r.Record != nil && r.SaveErr != nil {
		ks.saved = false
		what := "saving record"
		if r.Together {
			what = "saving record and status"
		}
		b.writeFailed(d, what, r.SaveErr)
	}
	if r.StatusLost() {
		ks.sunk = false
	}
	if r.PutErr != nil {
		b.writeFailed(d, "publishing status", r.PutErr)
	}
	b.afterWrite(ks)
}

// writeFailed reports a failed write of the pass d and asks for a retry.
func (b *Bus) writeFailed(d *pass, what string, err error) {
	err = fmt.Errorf("opbus: %s of %v: %w", what, d.ks.key, err)
	b.cfg.log.Error("opbus: "+what, "key", d.ks.key.String(), "err", err)
	d.errs = append(d.errs, err)
	d.storeFailed()
}

// afterWrite forgets what merged passes owed and the store's failures
// once the record and status are written.
func (b *Bus) afterWrite(ks *keyState) {
	if ks.saved {
		b.settleOwed(ks)
	}
	if ks.saved && ks.sunk && ks.x != nil {
		ks.x.storeFails = 0
	}
}

// writeBeside starts w beside the next pass of its key, in lane l. w
// waits for a write slot on its own goroutine and gives it back as soon as
// it returns: the key's next states run meanwhile, whether the write
// slots are all taken or the write is slow, and other keys' writes wait
// for no handler. If its key is parked on it once it returns (no lane
// holds the key: see park), the write's goroutine ends the key's hold
// itself (Claimed); writeq.Parking.Out keeps the hand-off.
func (b *Bus) writeBeside(ctx context.Context, l *lane, w *writeJob) {
	l.writes.Begin(w, &w.flight)
	go b.lanes.parked.Out(ctx, &b.mu, b.lanes.writeSem, w.d.ks, w, &w.flight, (*stage)(b)) // its goroutine holds no lane
}

// Claimed takes in the outcome of w, whose key was parked on it, on the
// write's goroutine, which holds the key now. It returns the write that
// owed, the backlog of queued passes, needs, parked in turn, or lets the
// key go and returns ok false.
func (s *stage) Claimed(ctx context.Context, w *writeJob, owed writeq.Backlog[statusSnap]) (*writeJob, *writeq.Flight, bool) {
	b, ks := (*Bus)(s), w.d.ks
	b.takeIn(w)
	if owed.Owed() && !b.dropped(ks) && ks.rec != nil {
		d := &pass{b: b, ks: ks, rec: ks.rec}
		next := &writeJob{}
		ok := b.prepareWrite(ctx, d, owed.Take(), next)
		b.mu.Lock()
		if !d.due.IsZero() {
			b.retryAt(ks, d.due)
		}
		if ok {
			b.lanes.parked.Next(ks, next, &next.flight)
			b.markReady(ks)
			b.mu.Unlock()
			return next, &next.flight, true
		}
		b.mu.Unlock()
		b.afterWrite(ks)
	}
	b.mu.Lock()
	delete(b.lanes.flying, ks)
	b.release(ks)
	b.mu.Unlock()
	return nil, nil, false
}

// join waits for the write that runs beside the pass in lane l, if one
// does, and takes in its outcome, before that pass writes in turn.
func (b *Bus) join(l *lane) { l.writes.JoinIn(l) }

// takeIn takes in the outcome of w and arms the retry a failed write asks
// for.
func (b *Bus) takeIn(w *writeJob) {
	b.finishWrite(w)
	if w.d.storeFail {
		b.mu.Lock()
		b.retryAt(w.d.ks, w.d.due)
		b.mu.Unlock()
	}
}

// park, after a pass of ks in lane l, does what the key's write cycle
// says (writeq.Cycle.Next) while the pass's write, or the write it
// queued its own behind, runs beside: run the next state of ks at once if
// one may run (writeq.Run), else leave ks parked on the write and take
// other keys' work (writeq.Park). A write already returned is taken in,
// and what a queued pass owes is written, beside in turn (writeq.Flush),
// until none is in flight or owed (writeq.Done).
func (b *Bus) park(ctx context.Context, l *lane, ks *keyState) writeq.Next {
	for {
		b.mu.Lock()
		next := l.writes.Next(writeq.Facts{Stopping: b.stopping, Ready: b.runnable(ks) && !b.awaited(ks), Slot: l.handling || b.lanes.handling < b.cfg.workers})
		switch next {
		case writeq.Run:
			if !l.handling { // given back while the pass waited for the write before
				b.lanes.handling++
				l.handling = true
			}
			if l.writes.Running() {
				b.stats.beside.Add(1)
			}
		case writeq.Park:
			b.lanes.parked.Park(ks, &l.writes.Key) // the lane's backlog is the parking's now
			b.markReady(ks)                        // a due retry, or the lane's maxTaken: another lane may take it over
			l.writes.Kept = false                  // the write's goroutine forgets the flying state
		}
		b.mu.Unlock()
		if next != writeq.Flush {
			return next
		}
		b.flush(ctx, l, ks, true) // joins the write before, then writes beside
	}
}

// takeParked gives lane l the key ks parked on its write, for a state of
// ks that may run now (see markReady); b.mu is held.
func (b *Bus) takeParked(l *lane, ks *keyState) bool {
	if l == nil || !b.lanes.parked.TakeOver(ks, &l.writes.Key) {
		return false
	}
	l.writes.Kept = true
	if l.writes.Running() {
		b.stats.beside.Add(1)
	}
	return true
}
