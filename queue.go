package opbus

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/opbus/opbus/internal/keyqueue"
)

// observation is one observed state of a key, waiting to be dispatched.
type observation struct {
	old, new  map[string]any
	inc       string       // incarnation ID of new (Options.Incarnation); "" if none
	tag       keyqueue.Tag // the keyqueue's: its number (Dispatch finds its own by it), and whether a Dispatch call awaits it (only that call takes it)
	hasOld    bool         // old is given by the source, not the bus's last state
	deleted   bool
	retry     bool        // a scheduled retry of the current state
	coalesced bool        // states before this one were skipped
	resumed   bool        // left pending by an earlier run: newer than the record's own state
	rel       []relChange // changes of related objects, applied before new (related.go)
	pre       *preDiff    // the subscribed changes from the state observed before (precompare.go)
}

// queues is what a Bus keeps of its keys; guarded by Bus.mu. The keys'
// queued states, holders, ready list and retry timers are in kq
// (internal/keyqueue); what they mean for the bus is in this file.
type queues struct {
	keys  map[Key]*keyState
	kq    *keyqueue.Queue[*keyState, observation]
	ended map[Key]endedKey // keys forgotten after their deletion
}

// endedKey is what the bus keeps of a key it forgot after its deletion.
type endedKey struct {
	inc      string // the incarnation deleted
	sinkOwed bool   // see keyExtra.sinkOwed
}

// keyState is what the bus keeps per object. Fields below "owned by the
// dispatching goroutine" are touched only by the goroutine that holds the
// key; the rest are guarded by Bus.mu, except where noted.
type keyState struct {
	key       Key
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
	// each named with its owner ("owned by"); what the keyqueue holds of
	// the key (its queued states, holder, block and retries) is asked of
	// it under Bus.mu, never copied here:
	//   pass:  the goroutine holding the key, making a pass (pass.go);
	//   write: the pass's commit and the write stage (commit.go,
	//          writestage.go, pipeline.go), on the goroutine holding the key.
	taken    bool // owned by pass: the stored pending states are in the queue (or in flight) now
	live     bool // owned by pass: an incarnation is current: observed, not deleted
	deleting bool // owned by pass: cur is the last state of an incarnation being deleted
	seen     bool // owned by pass: a state was dispatched by this Bus
	ended    bool // owned by pass: the last incarnation's deletion is finished, and none began since
	sunk     bool // owned by write: the sink has the current slots
	saved    bool // owned by write: the store has the current record
	shown    bool // owned by write, under Bus.mu: published holds the slots of the last commit
}

// keyExtra is the part of a key's state that only keys with retries,
// failures, Resume handlers or a finished deletion need, kept apart so that
// the common key costs less memory. It is made under Bus.mu; retries and
// tick are guarded by Bus.mu, the rest belong to the dispatching
// goroutine.
type keyExtra struct {
	retries *keyqueue.Queue[*keyState, observation] // the queue a retry of the key was armed in (stopTimer)
	tick    *tick                                   // the timer of the key's schedules (timer.go)

	behind     map[int]map[string]any // handler index → the state it last handled, while it fails
	resumeOwed []bool                 // by handler index: a Resume run is owed by this Bus
	endedInc   string                 // the incarnation whose deletion is finished
	sinkOwed   bool                   // the deletion was finished by an earlier process: a repeat goes to the DeleteSink
	loadFails  int                    // consecutive failures to load the record
	storeFails int                    // consecutive failures to save the record or publish the status
	storeDue   time.Time              // when the store or sink is tried again after storeFails
}

// newQueue makes the keyqueue of b, once its settings are final.
func (b *Bus) newQueue() {
	b.q.kq = keyqueue.New(keyqueue.Options[*keyState, observation]{
		Lock:       &b.mu,
		Tag:        func(o *observation) *keyqueue.Tag { return &o.tag },
		Clock:      queueClock{b.cfg.clock},
		MaxBacklog: b.cfg.maxBacklog,
		Coalesce:   b.coalesce,
		HandOver:   b.isParked,
		Listed:     func(*keyState) { b.offerWork() },
		Changed:    b.queueChanged,
	})
}

// queueClock is the bus's clock as the keyqueue's.
type queueClock struct{ Clock }

func (c queueClock) AfterFunc(d time.Duration, f func()) keyqueue.Timer {
	return c.Clock.AfterFunc(d, f)
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

// awaited reports whether a Dispatch call waits for ks, which Run then
// leaves to it; b.mu is held.
func (b *Bus) awaited(ks *keyState) bool { return b.q.kq.Awaited(ks) }

// keyState returns the state of key, creating it; b.mu is held.
func (b *Bus) keyState(key Key) *keyState {
	ks, ok := b.q.keys[key]
	if !ok {
		ks = &keyState{key: key, sunk: true, saved: true}
		if e, ok := b.q.ended[key]; ok {
			ks.ended = true
			if e.inc != "" || e.sinkOwed {
				ks.x = &keyExtra{endedInc: e.inc, sinkOwed: e.sinkOwed}
			}
			delete(b.q.ended, key)
		}
		b.q.keys[key] = ks
	}
	return ks
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
	if !b.owns(key) {
		// Its owner handles it; the related views of the objects this
		// bus owns still see it change (rule 46).
		b.relay(key, o, to)
		return notOwned("observation", key) // own.go
	}
	b.push(b.keyState(key), o)
	b.relay(key, o, to)
	return nil
}

// push appends o to the queue of ks, coalescing past the bound, and
// returns its number; b.mu is held.
func (b *Bus) push(ks *keyState, o observation) uint64 {
	ks.observed(&o)
	var seq uint64
	if o.tag.Awaited {
		seq = b.q.kq.AddAwaited(ks, o)
	} else {
		seq = b.q.kq.Add(ks, o)
	}
	b.stats.observed.Add(1)
	if b.cfg.observer != nil {
		b.cfg.observer.Observed(ks.key, b.q.kq.Len())
	}
	return seq
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

// coalesce, the keyqueue's hook past Options.MaxBacklog, shortens the
// backlog q of ks, the new state last: each run of updates of one
// incarnation keeps only its latest state. Deletions, incarnation
// boundaries and awaited states stay, so the queue may still be longer
// than the bound; b.mu is held.
func (b *Bus) coalesce(ks *keyState, q []observation) []observation {
	out := b.pendingRules().Fold(q, func(o *observation) {
		o.coalesced = true
		o.hasOld, o.old = false, nil // diff from the last dispatched state
	})
	if out[len(out)-1].coalesced || len(out) < len(q) {
		b.stats.coalesced.Add(1)
		b.cfg.log.Warn("opbus: backlog coalesced: intermediate states skipped", "key", ks.key.String(), "bound", b.cfg.maxBacklog)
		if b.cfg.observer != nil {
			b.cfg.observer.Coalesced(ks.key)
		}
	}
	return out
}

// bounds reports whether an incarnation may end between x and y without
// an observed deletion: never without incarnation IDs.
func (b *Bus) bounds(x, y observation) bool { return b.cfg.incarnation != nil && x.inc != y.inc }

// markReady lists ks for Run's goroutines (and a Wait before Run) if it
// has work and no holder, or its holder only waits on its write (parked);
// b.mu is held.
func (b *Bus) markReady(ks *keyState) { b.q.kq.List(ks) }

// makeDue makes a retry of ks due now and lists ks; b.mu is held.
func (b *Bus) makeDue(ks *keyState) {
	ks.extraLocked().retries = b.q.kq // for stopTimer
	b.q.kq.SetDue(ks)
}

// isParked reports whether ks is busy only with a write that runs beside
// (rule 22c), so that a lane may take it over; b.mu is held.
func (b *Bus) isParked(ks *keyState) bool {
	return b.lanes.parked.Parked(ks)
}

// countPending has the keyqueue count the store's listing of pending
// states as pending work while it is under way and the bus is not
// stopping (wakeup.go); b.mu is held.
func (b *Bus) countPending() {
	b.q.kq.Outside(b.resumed == resumeListing && !b.stopping)
}

// take pops the next observation of ks: a due retry first, then the queue
// unless it is blocked. force is Dispatch's: it retries an unfinished
// deletion, or takes the queue, without waiting for the retry timer, and
// leaves other due retries to the workers. own is the state of the
// Dispatch call that asks (0 for a lane): a state another call awaits is
// left to that call. b.mu is held, and the caller holds ks.
func (b *Bus) take(ks *keyState, force bool, own uint64) (observation, bool) {
	if (b.q.kq.Due(ks) && !force) || (force && ks.deleting) {
		// A deletion in progress goes before anything queued behind it.
		// Other retries are the workers': Dispatch handles the queue.
		b.q.kq.TakeRetry(ks)
		return observation{retry: true}, true
	}
	return b.q.kq.Take(ks, force, own) // none, or its Dispatch call takes it (rule 5)
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
	b.q.kq.PushFront(ks, keep...)
}

// queued returns a copy of the states queued for ks; b.mu is held.
func (b *Bus) queued(ks *keyState) []observation { return slices.Clone(b.q.kq.Items(ks)) }

// retryAt arms the retry timer of ks for t (replacing a later one); only a
// running bus retries, and a stopping one makes the retry due at once, to
// be saved as pending; b.mu is held.
func (b *Bus) retryAt(ks *keyState, t time.Time) {
	if !b.running {
		return // Dispatch alone: the caller decides
	}
	ks.extraLocked().retries = b.q.kq
	d, armed := b.q.kq.RetryAt(ks, t)
	if !armed {
		return // an earlier retry is armed (it re-arms for the rest), or the bus stops
	}
	b.stats.retried.Add(1)
	if b.cfg.observer != nil {
		b.cfg.observer.Retrying(ks.key, d)
	}
}

// stopTimer disarms the retry timer of ks and forgets a due retry; b.mu
// is held. A retry is armed or made due only with ks.x.retries set
// (retryAt, makeDue).
func (ks *keyState) stopTimer() {
	if x := ks.x; x != nil && x.retries != nil {
		x.retries.StopRetry(ks)
	}
}

// String names ks by its key, as the keyqueue's messages do.
func (ks *keyState) String() string { return ks.key.String() }
