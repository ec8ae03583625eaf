package k8s

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// LabelShardRing labels the Leases of the members of a shard ring; its
// value is the ring's name.
const LabelShardRing = "opbus.dev/shard-ring"

// AnnotationShardHolds, on a member's Lease, lists the buckets of the
// hash space the member handles or is about to take on: 64 hex digits, a
// bitmap of 256 buckets, bucket i (the lowest bit of the last digit being
// bucket 0) holding the uid hashes from i·2^56 to (i+1)·2^56 - 1.
const AnnotationShardHolds = "opbus.dev/shard-holds"

// Shards configures the membership of a replica in a shard ring: the
// replicas of one operator, each holding a Lease labelled with the ring's
// name, that split the objects between them (see [ShardRange]).
type Shards struct {
	// Namespace holds the members' Leases; it is required.
	Namespace string
	// Ring names the ring, the value of [LabelShardRing] on its Leases:
	// a label value. "" means the operator's name ([Options].Name, or
	// "opbus").
	Ring string
	// Identity names this replica; "" means the operator's name, the host
	// name and a random suffix.
	Identity string
	// LeaseDuration is how long after its last renewal a member's Lease
	// expires, and the member with it; RenewPeriod is how often a member
	// renews its Lease and reads the others'. They default to 15s and 2s;
	// LeaseDuration must exceed 2 × RenewPeriod.
	LeaseDuration, RenewPeriod time.Duration
}

// withDefaults returns a copy with every zero duration set.
func (s Shards) withDefaults() Shards {
	if s.LeaseDuration == 0 {
		s.LeaseDuration = 15 * time.Second
	}
	if s.RenewPeriod == 0 {
		s.RenewPeriod = 2 * time.Second
	}
	return s
}

// validate checks s, with ring the ring's name once defaulted.
func (s Shards) validate(ring string) error {
	if s.Namespace == "" {
		return errors.New("k8s: Shards.Namespace is empty: name the namespace of the shard ring's Leases, such as the operator's own")
	}
	if errs := validation.IsValidLabelValue(ring); len(errs) > 0 || ring == "" {
		return fmt.Errorf("k8s: shard ring name %q: want a label value (63 characters at most, alphanumeric, '-', '_' or '.' inside; set Shards.Ring if Options.Name is not one): %s", ring, strings.Join(errs, "; "))
	}
	d := s.withDefaults()
	if d.RenewPeriod <= 0 || d.LeaseDuration <= 2*d.RenewPeriod {
		return fmt.Errorf("k8s: Shards durations: lease %v, renew period %v: want lease > 2 × renew period > 0", d.LeaseDuration, d.RenewPeriod)
	}
	return nil
}

// shardRing is one replica's membership in a ring: it holds the replica's
// Lease and reads the others', and knows the live members.
//
// A member is live while its Lease has a holder and was renewed within
// LeaseDuration, as this process sees it: a renewal is dated by when this
// process first read it, not by the renewer's clock, as client-go's
// leader election does; a Lease seen for the first time is dated by its
// renewTime, at most LeaseDuration ago and not in the future.
type shardRing struct {
	leases    coordinationv1client.LeaseInterface
	ring, id  string
	lease     string // the name of this replica's Lease
	dur, tick time.Duration
	now       func() time.Time

	mu      sync.Mutex
	seen    map[string]leaseSeen // by Lease name
	members []string             // sorted
	holds   bucketSet            // AnnotationShardHolds of this replica
	changed chan struct{}        // closed and replaced when members change
	renewed time.Time            // start of the last successful renewal

	wmu sync.Mutex // serialises renew and read

	abandoned atomic.Bool // the Lease is renewed and deleted no more (abandon)
}

// leaseSeen is what a member last read of another's Lease.
type leaseSeen struct {
	holder  string
	renewed metav1.MicroTime
	holds   bucketSet
	at      time.Time // when this renewal was first read, on the local clock
	since   time.Time // when it was made, on the local clock (see renewedAt)
}

// renewedAt returns when a renewal of another member's Lease, whose
// renewTime is renewed and which this process first read at at, was
// made, on this process's clock: its renewTime, for a hand-off at the
// moment the Lease expired plus the grace rather than when this process
// happened to read it last, but no later than at (it had been made by
// then) and no earlier than a renew period before at, so that a renewer
// whose clock is behind this one's can make a hand-off come at most a
// renew period earlier than reading alone would (the holder's halt is
// timed to leave that much: see [sharder.wake]). A Lease seen for the
// first time is dated by at, as membership dates it.
func (r *shardRing) renewedAt(renewed metav1.MicroTime, at time.Time, first bool) time.Time {
	t := renewed.Time
	switch {
	case first || renewed.IsZero() || t.After(at):
		return at
	case t.Before(at.Add(-r.tick)):
		return at.Add(-r.tick)
	}
	return t
}

func newShardRing(leases coordinationv1client.LeasesGetter, cfg Shards, ring, id string) (*shardRing, error) {
	if err := cfg.validate(ring); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, errors.New("k8s: shard ring: the identity is empty")
	}
	d := cfg.withDefaults()
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return &shardRing{
		leases: leases.Leases(cfg.Namespace),
		ring:   ring, id: id,
		lease: fmt.Sprintf("%s-%016x", dnsPrefix(ring, 40), h.Sum64()),
		dur:   d.LeaseDuration, tick: d.RenewPeriod,
		now:     time.Now,
		seen:    map[string]leaseSeen{},
		changed: make(chan struct{}),
	}, nil
}

// dnsPrefix returns s cut to at most n bytes, ending in an alphanumeric
// character, for a name that must be a DNS label.
func dnsPrefix(s string, n int) string {
	s = strings.ToLower(s)
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s), "-")
}

// Members returns the live members, sorted, and a channel closed at their
// next change.
func (r *shardRing) Members() ([]string, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.members), r.changed
}

// Announce sets what this replica's Lease says it holds, written at the
// next renewal (or sync).
func (r *shardRing) Announce(holds bucketSet) {
	r.mu.Lock()
	r.holds = holds
	r.mu.Unlock()
}

// Holds returns what member's Lease last said it holds, and whether the
// member is live.
func (r *shardRing) Holds(member string) (bucketSet, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.seen {
		if s.holder == member {
			return s.holds, slices.Contains(r.members, member)
		}
	}
	return bucketSet{}, false
}

// heldByOthers returns the buckets that the Leases of other members said
// they hold, as last read: of live members, and of members whose Lease
// expired less than grace ago, which may still be stopping. A Lease
// deleted (a clean stop, after its member released everything) holds
// nothing.
func (r *shardRing) heldByOthers(grace time.Duration) bucketSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var held bucketSet
	for _, s := range r.seen {
		if s.holder != r.id && now.Sub(s.since) < r.dur+grace {
			held = held.or(s.holds)
		}
	}
	return held
}

// nextTakeable returns the earliest time after now at which buckets that
// another member's Lease lists stop being held by it (see heldByOthers):
// its last renewal plus LeaseDuration plus grace, from the Leases as last
// read; zero if there is none. A member that keeps renewing moves its
// own further away at each read.
func (r *shardRing) nextTakeable(grace time.Duration) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var next time.Time
	for _, s := range r.seen {
		if s.holder == r.id || s.holds.empty() {
			continue
		}
		if t := s.since.Add(r.dur + grace); t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// lastRenewed returns when the last successful renewal of this
// replica's Lease began; zero if none.
func (r *shardRing) lastRenewed() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renewed
}

// lapsed reports whether a renewal last, begun at last (zero: none yet),
// is so old that the others may see this replica's Lease expire before it
// renews again: more than LeaseDuration less a renew period ago.
func (r *shardRing) lapsed(last time.Time) bool {
	return !last.IsZero() && time.Since(last) > r.dur-r.tick
}

// sync renews this replica's Lease, with what it announces now, and reads
// the ring.
func (r *shardRing) sync(ctx context.Context) error {
	if err := r.renew(ctx); err != nil {
		return err
	}
	return r.read(ctx)
}

// run renews this replica's Lease and reads the ring every RenewPeriod
// until ctx ends, then deletes the Lease, so that the others see this
// replica leave at once. It returns an error only if the Lease cannot be
// deleted then; a failed renewal or read is logged by the caller's next
// look and retried.
func (r *shardRing) run(ctx context.Context, failed func(error)) error {
	t := time.NewTicker(r.tick)
	defer t.Stop()
	for {
		if err := r.sync(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, errAbandoned) {
			failed(err)
		}
		select {
		case <-ctx.Done():
			if r.abandoned.Load() {
				return nil
			}
			return r.leave(context.WithoutCancel(ctx))
		case <-t.C:
		}
	}
}

// abandon makes this replica renew its Lease no more and leave it in
// place when the ring stops, as a process that died would, and returns
// when the last renewal began: the others take its buckets once the Lease
// expired plus the grace. A test's stand-in for a crash.
func (r *shardRing) abandon() time.Time {
	r.wmu.Lock() // after a renewal under way
	defer r.wmu.Unlock()
	r.abandoned.Store(true)
	return r.lastRenewed()
}

// errAbandoned is what renewing an abandoned Lease returns.
var errAbandoned = errors.New("k8s: shard ring: this replica's Lease is abandoned")

// renew creates or renews this replica's Lease.
func (r *shardRing) renew(ctx context.Context) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if r.abandoned.Load() {
		return errAbandoned
	}
	r.mu.Lock()
	holds := r.holds
	r.mu.Unlock()
	begin := r.now()
	now := metav1.NewMicroTime(begin)
	secs := int32((r.dur + time.Second - 1) / time.Second)
	l, err := r.leases.Get(ctx, r.lease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name:   r.lease,
			Labels: map[string]string{LabelShardRing: r.ring},
		}}
		l.Spec.AcquireTime = &now
	} else if err != nil {
		return fmt.Errorf("k8s: shard ring %s: reading Lease %s: %w", r.ring, r.lease, err)
	}
	l.Spec.HolderIdentity = &r.id
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &now
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationShardHolds] = holds.String()
	if l.ResourceVersion == "" {
		_, err = r.leases.Create(ctx, l, metav1.CreateOptions{})
	} else {
		_, err = r.leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("k8s: shard ring %s: writing Lease %s: %w", r.ring, r.lease, err)
	}
	r.mu.Lock()
	r.renewed = begin
	r.mu.Unlock()
	return nil
}

// read lists the ring's Leases and updates the live members.
func (r *shardRing) read(ctx context.Context) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	list, err := r.leases.List(ctx, metav1.ListOptions{LabelSelector: LabelShardRing + "=" + r.ring})
	if err != nil {
		return fmt.Errorf("k8s: shard ring %s: listing its Leases: %w", r.ring, err)
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]leaseSeen{}
	var live []string
	for _, l := range list.Items {
		s := leaseSeen{at: now}
		if text, ok := l.Annotations[AnnotationShardHolds]; ok {
			// A malformed value holds nothing; only replicas write it.
			s.holds, _ = parseBuckets(text)
		}
		if l.Spec.HolderIdentity != nil {
			s.holder = *l.Spec.HolderIdentity
		}
		if l.Spec.RenewTime != nil {
			s.renewed = *l.Spec.RenewTime
		}
		old, ok := r.seen[l.Name]
		switch {
		case ok && old.holder == s.holder && old.renewed.Equal(&s.renewed):
			s.at, s.since = old.at, old.since
		case !ok:
			// First sight: date it by its renewal, within [now-dur, now].
			age := min(max(now.Sub(s.renewed.Time), 0), r.dur)
			s.at = now.Add(-age)
			s.since = r.renewedAt(s.renewed, s.at, true)
		default:
			s.since = r.renewedAt(s.renewed, s.at, false)
		}
		seen[l.Name] = s
		if s.holder != "" && now.Sub(s.at) < r.dur {
			live = append(live, s.holder)
		}
	}
	slices.Sort(live)
	live = slices.Compact(live)
	r.seen = seen
	if !slices.Equal(live, r.members) {
		r.members = live
		close(r.changed)
		r.changed = make(chan struct{})
	}
	return nil
}

// leave deletes this replica's Lease.
func (r *shardRing) leave(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := r.leases.Delete(ctx, r.lease, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("k8s: shard ring %s: deleting Lease %s on leaving: %w", r.ring, r.lease, err)
	}
	return nil
}
