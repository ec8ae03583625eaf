package opbus

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// observation is one observed state of a key, waiting to be dispatched.
type observation struct {
	old, new  map[string]any
	inc       string // incarnation ID of new (Options.Incarnation); "" if none
	seq       uint64 // order of arrival, for Dispatch to find its own
	hasOld    bool   // old is given by the source, not the bus's last state
	deleted   bool
	retry     bool        // a scheduled retry of the current state
	coalesced bool        // states before this one were skipped
	awaited   bool        // a Dispatch call waits to handle it itself: only that call takes it
	rel       []relChange // changes of related objects, applied before new (related.go)
	pre       *preDiff    // the subscribed changes from the state observed before (precompare.go)
}

// queues is what a Bus keeps of its keys and their queued states; guarded
// by Bus.mu.
type queues struct {
	keys     map[Key]*keyState
	ready    []*keyState       // keys with work and no holder (markReady)
	busy     []*keyState       // keys held by a pass
	queued   int               // states waiting across all keys
	pending  int               // keys ready or busy (countPending)
	idle     chan struct{}     // made by Wait while pending > 0; closed when it reaches 0
	readied  chan struct{}     // made by Wait before Run, while a key is busy; closed when a key becomes ready
	seq      uint64            // observations pushed, for Dispatch to find its own
	timerSeq uint64            // retry timers armed
	ended    map[Key]string    // keys forgotten after their deletion → that incarnation
	awaiting map[*keyState]int // keys Dispatch calls wait for → how many
	changed  chan struct{}     // closed at the next change a waiter may wait for (wakeup.go); made by a waiter
}

// keyState is what the bus keeps per object. Fields below "owned by the
// dispatching goroutine" are touched only by the goroutine that has set
// busy; the rest are guarded by Bus.mu, except where noted.
type keyState struct {
	key       Key
	queue     []observation
	last      map[string]any    // the latest observed state: the base of the next one's precompare
	published Slots             // the slots as of the last commit (nil: none), for Status
	values    map[string]string // the values as of the last commit, for Value
	x         *keyExtra         // what only some keys need; made under Bus.mu

	// owned by the dispatching goroutine
	rec   *record
	cur   map[string]any // the latest dispatched state
	clean uint64         // bit per handler (the first 64): its digest is that of cur

	// abandoned drops the results of a pass that outlived shutdown, and
	// stops that pass before its next handler; owned by stop (shutdown and
	// halt), set under the key's stripe lock (Bus.stripe).
	abandoned atomic.Bool

	// The flags, together so that they pack into the space an atomic.Bool
	// leaves (BenchmarkMemoryPerKey: the struct fits a smaller size class),
	// each named with its owner ("owned by"):
	//   queue: the per-key queue (queue.go, run.go, dispatch.go), under Bus.mu;
	//   pass:  the goroutine holding the key, making a pass (pass.go);
	//   write: the pass's commit and the write stage (commit.go,
	//          writestage.go, pipeline.go), on the goroutine holding the key.
	queuedNow bool // owned by queue: listed in queues.ready
	busy      bool // owned by queue: a pass holds the key (at most one)
	blocked   bool // owned by queue: the queue waits for the retry timer: a deletion or a record load is unfinished
	retryDue  bool // owned by queue: a retry is due; taken before the queue
	taken     bool // owned by queue: the stored pending states are in the queue (or in flight) now
	live      bool // owned by pass: an incarnation is current: observed, not deleted
	deleting  bool // owned by pass: cur is the last state of an incarnation being deleted
	seen      bool // owned by pass: a state was dispatched by this Bus
	ended     bool // owned by pass: the last incarnation's deletion is finished, and none began since
	sunk      bool // owned by write: the sink has the current slots
	saved     bool // owned by write: the store has the current record
	shown     bool // owned by write, under Bus.mu: published holds the slots of the last commit
}

// keyExtra is the part of a key's state that only keys with retries,
// failures, Resume handlers or a finished deletion need, kept apart so that
// the common key costs less memory. It is made under Bus.mu; its timer
// fields are guarded by Bus.mu, the rest belong to the dispatching
// goroutine.
type keyExtra struct {
	timer    ClockTimer
	timerSeq uint64    // the timer that may fire; older ones are stale
	timerAt  time.Time // when it fires
	tick     *tick     // the timer of the key's schedules (timer.go)

	behind     map[int]map[string]any // handler index → the state it last handled, while it fails
	resumeOwed []bool                 // by handler index: a Resume run is owed by this Bus
	endedInc   string                 // the incarnation whose deletion is finished
	sinkOwed   bool                   // the deletion was finished by an earlier process: a repeat goes to the DeleteSink
	loadFails  int                    // consecutive failures to load the record
	storeFails int                    // consecutive failures to save the record or publish the status
	storeDue   time.Time              // when the store or sink is tried again after storeFails
}

// extra returns the extra state of ks, making it; b.mu is not held.
func (b *Bus) extra(ks *keyState) *keyExtra {
	if ks.x != nil {
		return ks.x
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return ks.extraLocked()
}

// extraLocked is extra with b.mu held.
func (ks *keyState) extraLocked() *keyExtra {
	if ks.x == nil {
		ks.x = &keyExtra{}
	}
	return ks.x
}

func (ks *keyState) endedInc() string {
	if ks.x == nil {
		return ""
	}
	return ks.x.endedInc
}

func (ks *keyState) hasTimer() bool { return ks.x != nil && ks.x.timer != nil }

// awaited reports whether a Dispatch call waits for ks, which Run then
// leaves to it; b.mu is held. (Not in keyExtra: the goroutine that holds
// ks reads ks.x without b.mu.)
func (b *Bus) awaited(ks *keyState) bool { return len(b.q.awaiting) > 0 && b.q.awaiting[ks] > 0 }

// keyState returns the state of key, creating it; b.mu is held.
func (b *Bus) keyState(key Key) *keyState {
	ks, ok := b.q.keys[key]
	if !ok {
		ks = &keyState{key: key, sunk: true, saved: true}
		if inc, ok := b.q.ended[key]; ok {
			ks.ended = true
			if inc != "" {
				ks.x = &keyExtra{endedInc: inc}
			}
			delete(b.q.ended, key)
		}
		b.q.keys[key] = ks
	}
	return ks
}

// awaitedHead reports whether the next queued state of ks is one a waiting
// Dispatch call handles itself, not a lane; b.mu is held.
func (ks *keyState) awaitedHead() bool { return len(ks.queue) > 0 && ks.queue[0].awaited }

// awaitedByOther reports whether the next queued state of ks is one that a
// Dispatch call other than the one of state own handles; b.mu is held.
func (ks *keyState) awaitedByOther(own uint64) bool {
	return ks.awaitedHead() && ks.queue[0].seq != own
}

// disown leaves the state seq, if still queued in ks, to whoever takes the
// queue next: its Dispatch call returns without handling it; b.mu is held.
func (ks *keyState) disown(seq uint64) {
	for i := range ks.queue {
		if ks.queue[i].seq == seq {
			ks.queue[i].awaited = false
		}
	}
}

func (ks *keyState) hasWork() bool {
	return (len(ks.queue) > 0 && !ks.blocked) || ks.retryDue
}

// incarnationOf returns the incarnation ID of obj, recovering a panic of
// the user's function as an error.
func (b *Bus) incarnationOf(obj map[string]any) (id string, err error) {
	if b.cfg.incarnation == nil || obj == nil {
		return "", nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("opbus: Options.Incarnation panicked: %v", v)
		}
	}()
	return b.cfg.incarnation(obj), nil
}

// admit checks an observation at the door, puts its documents in canonical
// form and fills in its incarnation. An update of a state the bus holds is
// checked by the walk that compares it with that state (precompare.go).
func (b *Bus) admit(ctx context.Context, key Key, o *observation) error {
	if err := key.validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	cmp := b.cmpFor(key.Kind)
	var base map[string]any
	if ks := b.q.keys[key]; ks != nil && b.frozen && b.rel == nil && !o.deleted && !o.hasOld {
		base = ks.last // handlers are registered (frozen): what they read is known
	}
	b.mu.Unlock()
	if base != nil && o.new != nil {
		o.pre = b.precompare(key.Kind, cmp, base, o.new)
	}
	var err error
	switch {
	case o.pre != nil: // admitted as it was compared
	case o.deleted && o.new == nil:
	case o.deleted:
		if o.new, err = cmp.admitDocument(o.new); err != nil {
			return within(err, "opbus: last state of %v", key)
		}
	default:
		if o.new, err = cmp.admitDocument(o.new); err != nil {
			return within(err, "opbus: state of %v", key)
		}
	}
	if o.hasOld && o.old != nil {
		if o.old, err = cmp.admitDocument(o.old); err != nil {
			return within(err, "opbus: previous state of %v", key)
		}
	}
	inc, err := b.incarnationOf(o.new)
	o.inc = inc
	return err
}

// enqueue queues an observation and wakes a worker.
func (b *Bus) enqueue(ctx context.Context, key Key, o observation) error {
	if err := b.admit(ctx, key, &o); err != nil {
		return err
	}
	to, err := b.relatedTo(key, &o)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.freeze(); err != nil {
		return err
	}
	b.push(b.keyState(key), o)
	b.relay(key, o, to)
	return nil
}

// push appends o to the queue of ks, coalescing past the bound; b.mu is
// held.
func (b *Bus) push(ks *keyState, o observation) {
	b.q.seq++
	o.seq = b.q.seq
	ks.observed(&o)
	if len(ks.queue) >= b.cfg.maxBacklog {
		b.coalesce(ks, &o)
	}
	ks.queue = append(ks.queue, o)
	b.q.queued++
	b.stats.observed.Add(1)
	if b.cfg.observer != nil {
		b.cfg.observer.Observed(ks.key, b.q.queued)
	}
	b.markReady(ks)
}

// observed notes o as the latest state observed of ks, the base of the
// next one's precompare; b.mu is held.
func (ks *keyState) observed(o *observation) {
	switch {
	case o.deleted:
		ks.last = nil
	case o.new != nil:
		ks.last = o.new
	}
}

// coalesce shortens the backlog of ks before o joins it: each run of
// updates of one incarnation keeps only its latest state, and o replaces the
// run it continues. Deletions and incarnation boundaries stay, so the
// queue may still be longer than the bound; b.mu is held.
func (b *Bus) coalesce(ks *keyState, o *observation) {
	q := append(ks.queue, *o)
	out := q[:0]
	skipped := false
	for i, x := range q {
		if i+1 < len(q) && b.supersedes(x, q[i+1]) {
			q[i+1] = absorb(x, q[i+1])
			skipped = true
			continue // superseded by the next state of the same incarnation
		}
		if skipped {
			x.coalesced = true
			x.hasOld, x.old = false, nil // diff from the last dispatched state
			skipped = false
		}
		out = append(out, x)
	}
	*o = out[len(out)-1]
	b.q.queued -= len(ks.queue) - (len(out) - 1)
	clear(ks.queue[len(out)-1:])
	ks.queue = out[:len(out)-1]
	if o.coalesced || len(out)-1 < len(q)-1 {
		b.stats.coalesced.Add(1)
		b.cfg.log.Warn("opbus: backlog coalesced: intermediate states skipped", "key", ks.key.String(), "bound", b.cfg.maxBacklog)
		if b.cfg.observer != nil {
			b.cfg.observer.Coalesced(ks.key)
		}
	}
}

// bounds reports whether an incarnation may end between x and y without
// an observed deletion: never without incarnation IDs.
func (b *Bus) bounds(x, y observation) bool { return b.cfg.incarnation != nil && x.inc != y.inc }

// markReady puts ks on the ready list if it has work and is not busy or
// listed, and keeps the idle channel; b.mu is held.
func (b *Bus) markReady(ks *keyState) {
	if ks.hasWork() && !ks.queuedNow && (!ks.busy || b.isParked(ks)) {
		ks.queuedNow = true
		b.q.ready = append(b.q.ready, ks)
		if b.q.readied != nil {
			close(b.q.readied) // a Wait without Run dispatches it
			b.q.readied = nil
		}
		b.notify() // a Dispatch call waiting for the head of the queue to change
		b.offerWork()
	}
	b.countPending()
	b.queueChanged()
}

// isParked reports whether ks is busy only with a write that runs beside
// (rule 22c), so that a lane may take it over; b.mu is held.
func (b *Bus) isParked(ks *keyState) bool {
	if len(b.lanes.parked) == 0 {
		return false
	}
	_, ok := b.lanes.parked[ks]
	return ok
}

// countPending recounts the keys with work (listed or being dispatched) and
// wakes Wait when none is left; b.mu is held.
func (b *Bus) countPending() {
	b.q.pending = len(b.q.ready) + len(b.q.busy)
	if b.resumed == resumeListing && !b.stopping {
		b.q.pending++ // the store's pending states are being looked for (wakeup.go)
	}
	if b.q.pending == 0 && b.q.idle != nil {
		close(b.q.idle)
		b.q.idle = nil
	}
}

// take pops the next observation of ks: a due retry first, then the queue
// unless it is blocked. force is Dispatch's: it retries an unfinished
// deletion, or takes the queue, without waiting for the retry timer, and
// leaves other due retries to the workers. own is the state of the
// Dispatch call that asks (0 for a lane): a state another call awaits is
// left to that call. b.mu is held, and the caller holds ks busy.
func (b *Bus) take(ks *keyState, force bool, own uint64) (observation, bool) {
	if (ks.retryDue && !force) || (force && ks.deleting) {
		// A deletion in progress goes before anything queued behind it.
		// Other retries are the workers': Dispatch handles the queue.
		ks.retryDue = false
		ks.blocked = false
		return observation{retry: true}, true
	}
	if len(ks.queue) > 0 && (!ks.blocked || force) {
		if ks.awaitedByOther(own) {
			return observation{}, false // its Dispatch call takes it (rule 5)
		}
		o := ks.queue[0]
		ks.queue[0] = observation{}
		ks.queue = ks.queue[1:]
		if len(ks.queue) == 0 {
			ks.queue = nil
		}
		b.q.queued--
		return o, true
	}
	return observation{}, false
}

// unshift puts observations back at the head of ks's queue, oldest first;
// b.mu is held.
func (b *Bus) unshift(ks *keyState, os ...observation) {
	var keep []observation
	for _, o := range os {
		if !o.retry {
			keep = append(keep, o)
		}
	}
	if len(keep) == 0 {
		return
	}
	ks.queue = append(keep, ks.queue...)
	b.q.queued += len(keep)
}

// retryAt arms the retry timer of ks for t (replacing a later one); only a
// running bus retries; b.mu is held.
func (b *Bus) retryAt(ks *keyState, t time.Time) {
	if !b.running {
		return // Dispatch alone: the caller decides
	}
	if b.stopping {
		ks.retryDue = true // saved as pending by persistPending
		return
	}
	x := ks.extraLocked()
	if x.timer != nil {
		if !x.timerAt.After(t) {
			return // an earlier retry is armed; it re-arms for the rest
		}
		x.timer.Stop()
	}
	d := max(b.until(t), 0)
	b.stats.retried.Add(1)
	if b.cfg.observer != nil {
		b.cfg.observer.Retrying(ks.key, d)
	}
	b.q.timerSeq++
	seq := b.q.timerSeq
	x.timerSeq, x.timerAt = seq, t
	x.timer = b.cfg.clock.AfterFunc(d, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if x.timerSeq != seq || b.q.keys[ks.key] != ks {
			return // stopped, replaced, or of a key state that is gone
		}
		x.timer = nil
		if b.stopping {
			return
		}
		ks.retryDue = true
		b.markReady(ks)
	})
}

// stopTimer disarms the retry timer of ks; b.mu is held.
func (ks *keyState) stopTimer() {
	if x := ks.x; x != nil {
		if x.timer != nil {
			x.timer.Stop()
			x.timer = nil
		}
		x.timerSeq = 0
	}
	ks.retryDue = false
}
