package opbus

import (
	"context"
	"fmt"
	"time"

	stored "github.com/opbus/opbus/internal/record"
	"github.com/opbus/opbus/internal/timegrid"
)

// A schedule is a handler's timer on one incarnation of one object
// (internal/timegrid holds it and its arithmetic). It comes from
// [On.Every] (a periodic handler) or from [Event.Again] (one handler run
// asking for another).
//
// The record is written only when a schedule starts or changes (a new
// period, a new anchor), never for a run alone: on Kubernetes each record
// write is an API-server write. A run moves the anchor in memory; any
// write the record gets anyway carries the newer one. After a restart the
// handler is due at the first due time after the stored anchor: due times
// missed while no program ran, and runs the store does not know of,
// collapse into one run at the first pass; the grid, and so the cadence,
// is kept.
type schedule = timegrid.Schedule

// maxPeriod bounds a schedule's period, [On.Every] (checked by Handle) and
// [Event.Again] (longer is taken as this). A schedule's times are Unix
// nanoseconds, an int64 that ends in April 2262, about 236 years after
// 2026: a period of 250 years would wrap anchor + every into the past and
// make the handler due at once, again and again. With at most 100 years,
// a due time stays inside the int64 for every anchor before 2162; past
// that, and for a stored period beyond the bound, the arithmetic below
// saturates at the end of time instead of wrapping: such a schedule is
// never due.
const maxPeriod = stored.MaxPeriod

// schedOf returns the schedule of handler id, or nil.
func (r *record) schedOf(id string) *schedule { return timegrid.Find(r.Timers(), id) }

// setSched puts s in place of the schedule of its handler.
func (r *record) setSched(s *schedule) { r.SetTimers(timegrid.Put(r.Timers(), s)) }

// DueFunc decides, instead of the clock, whether a handler's schedule is
// due in a pass; see [Options.Due]. again reports that the schedule comes
// from [Event.Again], not from [On.Every].
type DueFunc func(key Key, handler string, again bool) bool

// Again asks for the handler to run once more after d even if nothing it
// reads changes: "handled for now, look again after d". It is a result,
// not a failure: when the handler returns a nil error its value is
// handled, its slot shows the status it returned (such as [Waiting]), and
// no failure is counted; it also runs earlier if its value changes. Each
// run that calls Again again keeps polling at the same period without a
// record write; a run that does not call it ends the polling (a periodic
// handler goes back to its [On.Every]). Again is ignored when the handler
// returns an error (retries follow [RetryAfter] and the backoff) and when
// d is not positive. Under the Juju adapter the next run is at the next
// hook, whatever d. A d longer than 100 years is taken as 100 years
// (the bound of [On.Every]), with a warning in the log.
func (ev *Event) Again(d time.Duration) {
	if ev.d == nil || d <= 0 {
		return
	}
	if d > maxPeriod {
		ev.d.b.cfg.log.Warn("opbus: Event.Again past the bound of a period: taken as the bound", "key", ev.Key.String(), "handler", ev.Handler, "again", d, "bound", maxPeriod)
		d = maxPeriod
	}
	ev.again = d
}

// scheduleOf returns h's schedule on the record, or nil.
func (d *pass) scheduleOf(h *handler) *schedule {
	return d.rec.schedOf(h.id)
}

// isDue reports whether h's schedule s is due in this pass.
func (d *pass) isDue(h *handler, s *schedule) bool {
	if d.b.cfg.due != nil {
		return d.b.cfg.due(d.ks.key, h.id, s.Every != h.every)
	}
	if d.now.IsZero() {
		d.now = d.b.now()
	}
	return !d.now.Before(s.Next())
}

// runDue runs h if its schedule is due and its value is the one it last
// handled, and reports whether it took care of h in this pass (ran it, or
// found it waiting for the retry of a failed due run). A changed value is
// left to the usual path: that run is the due one too.
func (b *Bus) runDue(ctx context.Context, d *pass, h *handler, coalesced bool) bool {
	s := d.scheduleOf(h)
	if s == nil {
		return false
	}
	stored := d.rec.Digests[h.idx]
	failingHere := d.rec.FailureOn(h.id, stored) != nil // a due run failed, on an unchanged value
	anchor := s.Anchor
	if !failingHere && !d.isDue(h, s) {
		return false
	}
	cur := stored
	if d.old == nil || !d.ks.clean.Is(h.idx) || touches(b.cmpOf(h, d.ks.key.Kind), d.subscribed(), h.fields) {
		// Its value may have changed: compare (a clean handler's value
		// cannot have changed unless the diff touches its fields).
		var err error
		if cur, err = b.digestFor(d, h); err != nil || cur != stored {
			return false
		}
	}
	if !failingHere || !d.waiting(h, cur) {
		typ := Update
		if stored.isZero() {
			typ = Create
		}
		d.tick = true
		if o, ok := b.cfg.observer.(TimerObserver); ok && !failingHere {
			o.TimerDue(d.ks.key, h.id, max(-b.until(s.Next()), 0))
		}
		b.run(ctx, d, h, typ, cur, coalesced)
		d.tick = false
	}
	if now := b.now(); d.scheduleOf(h) == s && s.Anchor == anchor && !s.Next().After(now) {
		// Failed, waiting for a retry, filtered out by When, or
		// interrupted: the schedule is next due at its next due time. (A
		// run that succeeded moved the anchor to its start: a due time
		// that passed while it ran is due now.)
		s.Tried(now)
	}
	return true
}

// scheduled updates h's schedule after a successful run that began at
// start and asked for another after again (0: none). A due run's next due
// time is a period after the due time it ran for. A run that was not due
// (its value changed) leaves a periodic handler's grid alone; a run that
// asks Again restarts the grid at start if the next due time would come
// sooner than asked: by any amount after a run that was not due, by more
// than a tenth of the period after a due run that began late (such as the
// run that collapses missed due times at a restart). Neither writes the
// record: only a new schedule or a new period does.
func (d *pass) scheduled(h *handler, again time.Duration, start time.Time) {
	every := h.every
	if again > 0 {
		every = max(again.Truncate(time.Millisecond), time.Millisecond) // as stored
	}
	slack := time.Duration(0)
	if d.tick {
		slack = every / 10 // a due run's start may pass its due time a little
	}
	if l, changed := timegrid.AfterRun(d.rec.Timers(), h.id, every, start, again > 0, slack); changed {
		d.rec.SetTimers(l) // a new schedule, or polling ended
		d.dirty = true
	}
}

// startSchedules starts the schedule of each periodic handler of the key
// that has none yet and did not run in this pass (its value was handled
// before it became periodic, or it takes no Create): from now.
func (b *Bus) startSchedules(d *pass) {
	if !b.reg.periodic || d.ks.deleting || d.rec == nil {
		return
	}
	for _, h := range b.reg.handlers {
		if h.every == 0 || !h.forKind(d.ks.key.Kind) || d.scheduleOf(h) != nil {
			continue
		}
		if d.rec.Digests[h.idx].isZero() {
			continue // not handled yet: its first success starts it
		}
		d.rec.setSched(&schedule{ID: h.id, Anchor: timegrid.StartAt(b.now()), Every: h.every})
		d.dirty = true
	}
}

// armTick arms the timer of ks for the earliest due time among its
// schedules, or stops it when there is none or the incarnation is being
// deleted or is gone; checked is when the pass looked at the schedules
// (zero if it did not). The caller holds ks busy. Under [Options.Due] no
// timer is armed: the caller decides when passes happen.
func (b *Bus) armTick(ks *keyState, checked time.Time) {
	var at time.Time
	if ks.rec != nil && ks.live && !ks.deleting && b.cfg.due == nil {
		at = timegrid.Earliest(ks.rec.Timers(), checked)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armTickAt(ks, at)
}

// armTickAt arms the timer of ks for at, or stops it for the zero time;
// only a running bus arms timers; b.mu is held.
func (b *Bus) armTickAt(ks *keyState, at time.Time) {
	if at.IsZero() {
		if ks.x != nil {
			ks.x.stopTick()
		}
		return
	}
	if !b.running || b.stopping {
		return
	}
	x := ks.extraLocked()
	x.tick = timegrid.Rearm(x.tick, at, func(t *tick) timegrid.Stopper {
		return b.cfg.clock.AfterFunc(max(b.until(at), 0), func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if x.tick != t || b.q.keys[ks.key] != ks || b.stopping {
				return // stopped, replaced, or of a key state that is gone
			}
			x.tick = nil
			b.makeDue(ks) // a pass over the current state, as a retry
		})
	})
}

// armSchedules arms the timers of the keys that passes made before Run
// (Dispatch, Wait) left with schedules; b.mu is held, and Run has just set
// running. A key being dispatched arms its own at the end of its pass.
func (b *Bus) armSchedules() {
	if b.cfg.due != nil {
		return
	}
	for _, ks := range b.q.keys {
		if b.q.kq.Held(ks) || ks.rec == nil || !ks.live || ks.deleting || len(ks.rec.Timers()) == 0 {
			continue
		}
		b.armTickAt(ks, timegrid.Earliest(ks.rec.Timers(), time.Time{}))
	}
}

// tick is the timer of a key's schedules (internal/timegrid), apart from
// the retry timer: a key whose only timer is a schedule has no work to
// save at shutdown.
type tick = timegrid.Tick

// stopTick disarms the schedule timer; Bus.mu is held.
func (x *keyExtra) stopTick() {
	x.tick.Stop()
	x.tick = nil
}

// checkEvery reports an On.Every that cannot work for handler id.
func checkEvery(id string, every time.Duration, types uint8) error {
	if err := timegrid.CheckPeriod(every, maxPeriod); err != nil {
		return fmt.Errorf("opbus: handler %q: On.Every is %v: %w", id, every, err)
	}
	if every > 0 && types&(1<<Create|1<<Update) == 0 {
		return fmt.Errorf("opbus: handler %q: On.Every is set but Types has neither Create nor Update: a periodic run is an update of the object", id)
	}
	return nil
}
