package k8s

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
)

// sharder runs a Source as a member of a shard ring: it handles only the
// objects whose shard uid hashes into the buckets it owns, and hands
// buckets over as members come and go.
//
// A bucket moves only once its previous holder has released it: that
// replica's [opbus.Bus.Release] returned (nothing of the bucket's keys
// runs or will be written) and its Lease no longer lists the bucket, or
// its Lease expired at least grace ago. Before taking a bucket on, a
// replica lists it on its own Lease and reads the ring again: if another
// Lease lists it too, it withdraws and tries again later, so that two
// replicas whose views of the ring differ for a moment never both take it.
type sharder struct {
	s      *Source
	bus    *opbus.Bus
	ring   *shardRing
	grace  time.Duration
	server bool // the API server applies shard selectors

	mu     sync.Mutex
	owned  bucketSet // buckets whose keys the bus handles
	target bucketSet // buckets the ring assigns this replica
	joined bool      // the ring was read with this replica in it
	live   bool      // at the last step: in the ring, its Lease renewed in time

	keys     shardKeys    // the hash of each key seen
	notOwned atomic.Int64 // states received of keys not owned
	acquired atomic.Int64 // hand-offs that took buckets on
	released atomic.Int64 // hand-offs that gave buckets up
}

// shardGrace is how long after a member's Lease expired its buckets are
// taken over: the time a replica that stopped renewing takes to see it
// and release them (a renew period), plus haltMargin.
func shardGrace(cfg Shards) time.Duration { return cfg.withDefaults().RenewPeriod + haltMargin }

// shard runs the Source as a member of its ring until ctx ends.
func (s *Source) shard(ctx context.Context, bus *opbus.Bus) error {
	cfg := s.opts.Shards.withDefaults()
	ring := cfg.Ring
	if ring == "" {
		ring = s.name
	}
	id := cfg.Identity
	if id == "" {
		id = s.identity()
	}
	r, err := newShardRing(s.leases, cfg, ring, id)
	if err != nil {
		return err
	}
	sh := &sharder{s: s, bus: bus, ring: r, grace: shardGrace(cfg)}
	// The bus owns nothing until the ring assigns it buckets, but for the
	// objects of read-only resources, which every replica owns.
	if err := bus.Release(ctx, func(key opbus.Key) bool { return !sh.everywhere(key) }); err != nil {
		return err
	}
	s.mu.Lock()
	s.sharder = sh
	s.mu.Unlock()
	s.probe.set(func(p *probeState) { p.sharded = sh.ready })

	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer rcancel()
	ringDone := make(chan error, 1)
	go func() {
		ringDone <- r.run(rctx, func(err error) { s.log.Warn("k8s: shard ring", "ring", ring, "err", err) })
	}()
	s.log.Info("k8s: joining shard ring", "ring", ring, "identity", id, "namespace", cfg.Namespace)
	sh.server = s.logShardSelection(ctx, cfg.Namespace)

	var wg sync.WaitGroup
	lctx, lcancel := context.WithCancel(ctx)
	wg.Go(func() { sh.balance(lctx, cfg.RenewPeriod) })
	err = s.lead(ctx, bus)
	lcancel()
	wg.Wait()
	// The bus has stopped, its pending states saved: leave the ring, so
	// that the others take the buckets on at once.
	rcancel()
	return errors.Join(err, <-ringDone)
}

// ready returns why the replica is not ready: it has not joined the
// ring, it is no longer a live member (its Lease not renewed in time, so
// that it released everything, or gone from the ring), or it does not own
// all its buckets yet; nil once it does.
func (sh *sharder) ready() error {
	last := sh.ring.lastRenewed()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch {
	case !sh.joined:
		return fmt.Errorf("%w: not in shard ring %s yet", ErrNotReady, sh.ring.ring)
	case sh.ring.lapsed(last):
		return fmt.Errorf("%w: its Lease in shard ring %s was last renewed %v ago: it handles nothing until it renews", ErrNotReady,
			sh.ring.ring, time.Since(last).Round(time.Millisecond))
	case !sh.live:
		return fmt.Errorf("%w: not a live member of shard ring %s: it handles nothing until the ring lists it again", ErrNotReady, sh.ring.ring)
	case sh.target.minus(sh.owned).count() > 0:
		return fmt.Errorf("%w: %d of its %d shard buckets are still held by other replicas", ErrNotReady,
			sh.target.minus(sh.owned).count(), sh.target.count())
	}
	return nil
}

// note records the shard hash of key, from obj, and reports whether this
// replica handles it.
func (sh *sharder) note(key opbus.Key, obj map[string]any) bool {
	h := shardHash(shardUID(obj))
	sh.keys.note(key, h)
	sh.mu.Lock()
	ok := sh.owned.hasHash(h)
	sh.mu.Unlock()
	if !ok {
		sh.notOwned.Add(1)
	}
	return ok
}

// everywhere reports whether key is of a read-only resource: no handler
// runs on its objects, which are watched for the objects they relate to
// (owned children, referenced objects). Every replica receives them and
// its bus owns them, so that their changes reach the objects related to
// them on whichever replica handles those (the bus passes a change on
// only to the objects it owns).
func (sh *sharder) everywhere(key opbus.Key) bool {
	r, err := sh.s.resourceFor(key)
	return err == nil && r.readOnly
}

// seenEverywhere reports whether every replica of a shard ring watches
// all of r's objects though one alone handles each: a resource Referenced
// by another on which handlers run. An object of it is handled by the
// replica its own shard uid places it with; every other replica gives its
// changes to its bus only for the related views of the referrers it
// handles (the bus refuses the object itself with [opbus.ErrNotOwned],
// having passed the change on to them: see [watch.relate]).
func (r *resource) seenEverywhere() bool { return len(r.cfg.Referenced) > 0 && !r.readOnly }

// keysIn returns the predicate of the keys whose hash lies in set; a key
// owned everywhere is in no set.
func (sh *sharder) keysIn(set bucketSet) func(opbus.Key) bool {
	return func(key opbus.Key) bool {
		if sh.everywhere(key) {
			return false
		}
		if h, ok := sh.keys.lookup(key); ok {
			return set.hasHash(h)
		}
		if r, err := sh.s.resourceFor(key); err == nil {
			if u, ok := r.cached(key); ok {
				return set.hasHash(shardHash(shardUID(u.Object)))
			}
		}
		return false
	}
}

// balance moves buckets to and from this replica as the ring changes,
// until ctx ends: at each change of the members, every renew period, and
// at the moments [sharder.wake] names.
func (sh *sharder) balance(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		_, changed := sh.ring.Members()
		sh.step(ctx)
		at, read := sh.wake()
		var woken <-chan time.Time
		if !at.IsZero() {
			timer.Reset(max(time.Until(at), 0) + time.Millisecond)
			woken = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C:
		case <-woken:
			if read {
				// A Lease that held buckets expired with its grace:
				// read the ring now, not at its next read, so that
				// the step sees the member gone and its buckets free.
				if err := sh.ring.read(ctx); err != nil && ctx.Err() == nil {
					sh.s.log.Warn("k8s: shard ring: reading it as a Lease expired", "err", err)
				}
			}
		}
		timer.Stop()
	}
}

// wake returns the next moment the balancer must step at, however the
// ring reads or ticks, and whether it must read the ring first: when a
// bucket held by another member's Lease becomes free to take, its last
// renewal plus LeaseDuration plus the grace (so that a hand-off after a
// crash takes that long, not up to a renew period or two more); or, if
// sooner, when this replica's own Lease lapses (see [shardRing.lapsed]),
// so that it stops handling at once, a renew period before the others
// could see its Lease expire, and a grace before they take its buckets.
// Zero if neither is ahead.
func (sh *sharder) wake() (at time.Time, read bool) {
	take := sh.ring.nextTakeable(sh.grace)
	var lapse time.Time
	sh.mu.Lock()
	owns := !sh.owned.empty()
	sh.mu.Unlock()
	if last := sh.ring.lastRenewed(); owns && !last.IsZero() {
		if t := last.Add(sh.ring.dur - sh.ring.tick); time.Until(t) > 0 {
			lapse = t
		}
	}
	switch {
	case take.IsZero():
		return lapse, false
	case lapse.IsZero() || take.Before(lapse):
		return take, true
	}
	return lapse, false
}

// step releases the buckets this replica no longer should own and takes
// on those it should that no other replica holds.
func (sh *sharder) step(ctx context.Context) {
	members, _ := sh.ring.Members()
	me := sh.ring.id
	in := false
	for _, m := range members {
		in = in || m == me
	}
	var target bucketSet
	if in {
		target = bucketsOf(assign(members), me)
	}
	// A replica whose Lease may have expired for the others stops
	// handling everything.
	lapsed := sh.ring.lapsed(sh.ring.lastRenewed())
	if lapsed {
		target = bucketSet{}
	}
	sh.mu.Lock()
	sh.target, sh.joined, sh.live = target, sh.joined || in, in && !lapsed
	drop := sh.owned.minus(target)
	sh.mu.Unlock()

	if !drop.empty() {
		// Not owned from now on: the watch gives the bus none of their
		// states while it releases them.
		begin := time.Now()
		sh.mu.Lock()
		sh.owned = sh.owned.minus(drop)
		owned := sh.owned
		sh.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, sh.grace)
		err := sh.bus.Release(rctx, sh.keysIn(drop))
		cancel()
		if err == nil {
			sh.keys.released(drop) // the bus forgot their keys
		}
		sh.ring.Announce(owned)
		if err := sh.ring.sync(ctx); err != nil && ctx.Err() == nil {
			sh.s.log.Warn("k8s: shard ring: announcing a release", "err", err)
		}
		sh.selectOwned()
		sh.released.Add(1)
		sh.s.opts.Metrics.handoff("released", time.Since(begin))
		sh.s.log.Info("k8s: released shard buckets", "buckets", drop.count(), "owned", owned.count(), "took", time.Since(begin), "err", err)
	}

	sh.mu.Lock()
	want := target.minus(sh.owned)
	owned := sh.owned
	sh.mu.Unlock()
	want = want.minus(sh.ring.heldByOthers(sh.grace))
	if want.empty() || ctx.Err() != nil {
		return
	}
	// Claim, then check that nobody else claims the same.
	claimed := time.Now()
	sh.ring.Announce(owned.or(want))
	if err := sh.ring.sync(ctx); err != nil {
		sh.ring.Announce(owned)
		if ctx.Err() == nil {
			sh.s.log.Warn("k8s: shard ring: claiming buckets", "err", err)
		}
		return
	}
	take := want.minus(sh.ring.heldByOthers(sh.grace))
	sh.ring.Announce(owned.or(take))
	if take.empty() {
		return
	}
	begin := time.Now()
	if err := sh.bus.Acquire(ctx, sh.keysIn(take)); err != nil {
		if ctx.Err() == nil {
			sh.s.log.Error("k8s: acquiring shard buckets", "err", err)
		}
		return
	}
	sh.mu.Lock()
	sh.owned = sh.owned.or(take)
	sh.mu.Unlock()
	sh.selectOwned()
	sh.acquired.Add(1)
	sh.s.opts.Metrics.handoff("acquired", time.Since(claimed))
	n := sh.s.observeCached(func(obj map[string]any) bool { return take.hasHash(shardHash(shardUID(obj))) })
	sh.s.log.Info("k8s: took on shard buckets", "buckets", take.count(), "owned", owned.or(take).count(), "objects", n, "took", time.Since(begin))
}

// ownsDeleted reports whether this replica handles the deletion of key,
// whose last state is u (nil if unknown), and moves its hash aside (see
// [shardKeys]).
func (sh *sharder) ownsDeleted(key opbus.Key, u *unstructured.Unstructured) bool {
	if sh.everywhere(key) {
		return true
	}
	defer sh.keys.deleted(key)
	if u != nil {
		return sh.note(key, u.Object)
	}
	sh.mu.Lock()
	owned := sh.owned
	sh.mu.Unlock()
	return sh.keysIn(owned)(key)
}

// observeCached gives the running watch's handlers, as added, every cached
// object of a kind that handlers run on for which pick is true, and
// returns how many: the objects of buckets just taken on.
func (s *Source) observeCached(pick func(obj map[string]any) bool) int {
	s.mu.Lock()
	w, kinds := s.watch, s.kinds
	s.mu.Unlock()
	if w == nil {
		return 0
	}
	n := 0
	for _, r := range kinds {
		if r.readOnly || r.shared != nil {
			continue
		}
		for _, inf := range r.informers {
			for _, o := range inf.GetStore().List() {
				if u, ok := o.(*unstructured.Unstructured); ok && pick(u.Object) {
					w.changed(r, nil, u)
					n++
				}
			}
		}
	}
	return n
}

// leasesGVR is the resource of the shard ring's Leases.
var leasesGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// logShardSelection says once in the log how this replica receives the
// objects, and reports whether the API server applies shard selectors:
// it lists the ring's Leases (which it may list) with a selector of half
// the hash space and looks for it echoed. Custom resources' lists echo
// nothing (an unstructured list has no shardInfo), though the server
// selects them too. Where the server does not, the replica watches every
// object and drops those of other replicas (counted by
// opbus_shard_objects_not_owned_total).
func (s *Source) logShardSelection(ctx context.Context, ns string) bool {
	half := shardSelector([]ShardRange{{Start: 0, Last: math.MaxUint64 / 2}})
	applied, err := serverShards(ctx, s.dyn, leasesGVR, ns, half)
	switch {
	case err != nil:
		s.log.Warn("k8s: shard ring: could not tell whether the API server applies shard selectors; this replica watches every object and filters on its side", "err", err)
	case applied:
		s.log.Info("k8s: shard ring: the API server applies shard selectors (ShardedListAndWatch): this replica lists and watches with the selector of its buckets (owned children, whose shard is their owner's, unselected), and drops what the server still sends of other replicas' objects")
	default:
		s.log.Info("k8s: shard ring: the API server does not apply shard selectors (feature gate ShardedListAndWatch off, or a server before v1.36): this replica watches every object and filters on its side")
	}
	return applied
}

// selectOwned sets the shard selector of the sharded informers to the
// buckets owned, when the server applies selectors; every object while
// none is owned.
func (sh *sharder) selectOwned() {
	if !sh.server {
		return
	}
	sh.mu.Lock()
	owned := sh.owned
	sh.mu.Unlock()
	sh.s.shardSel.set(shardSelector(owned.ranges()))
}
