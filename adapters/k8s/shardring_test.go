package k8s

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestShardsValidate: bad ring settings are refused with what was expected.
func TestShardsValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Shards
		ring string
		want string
	}{
		{Shards{}, "webapp", "Shards.Namespace is empty"},
		{Shards{Namespace: "ops"}, "web app", `shard ring name "web app"`},
		{Shards{Namespace: "ops"}, "", `shard ring name ""`},
		{Shards{Namespace: "ops", LeaseDuration: time.Second, RenewPeriod: time.Second}, "webapp", "want lease > 2 × renew period"},
	} {
		err := tc.cfg.validate(tc.ring)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v, ring %q: error %v, want one saying %q", tc.cfg, tc.ring, err, tc.want)
		}
	}
	if err := (Shards{Namespace: "ops"}).validate("webapp"); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}

// TestShardRingDatesRenewals: a member dates another's renewal by its
// Lease's renewTime, so that its buckets become free to take exactly the
// Lease duration plus the grace after it, not after this member happened
// to read it; a renewTime after the read that saw it counts as that
// read's time, and one more than a renew period before it (a renewer's
// clock behind this one's) as a renew period before.
func TestShardRingDatesRenewals(t *testing.T) {
	const dur, tick, grace = 5 * time.Second, 500 * time.Millisecond, 2500 * time.Millisecond
	cs := fake.NewClientset()
	r, err := newShardRing(cs.CoordinationV1(), Shards{Namespace: "ops", LeaseDuration: dur, RenewPeriod: tick}, "ring", "me")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var clock time.Time
	r.now = func() time.Time { return clock }
	var holds bucketSet
	holds.add(7)
	leases := cs.CoordinationV1().Leases("ops")
	other := "other"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: "ring-other", Labels: map[string]string{LabelShardRing: "ring"},
		Annotations: map[string]string{AnnotationShardHolds: holds.String()},
	}}
	lease.Spec.HolderIdentity = &other
	for i, tc := range []struct {
		what          string
		renewed, read time.Duration // after base
		takeable      time.Duration // after base: renewal + dur + grace
	}{
		{"first sight, dated by its renewal", 0, 100 * time.Millisecond, 7500 * time.Millisecond},
		{"a renewal read 400 ms after it was made", time.Second, 1400 * time.Millisecond, 8500 * time.Millisecond},
		{"a renewTime after the read (renewer's clock ahead)", time.Hour, 2 * time.Second, 9500 * time.Millisecond},
		{"a renewTime an hour before the read (renewer's clock behind)", -time.Hour, 3 * time.Second, 10 * time.Second},
	} {
		renewed := metav1.NewMicroTime(base.Add(tc.renewed))
		lease.Spec.RenewTime = &renewed
		if i == 0 {
			lease, err = leases.Create(t.Context(), lease, metav1.CreateOptions{})
		} else {
			lease, err = leases.Update(t.Context(), lease, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		clock = base.Add(tc.read)
		if err := r.read(t.Context()); err != nil {
			t.Fatal(err)
		}
		want := base.Add(tc.takeable)
		if got := r.nextTakeable(grace); !got.Equal(want) {
			t.Errorf("%s: takeable at base + %v, want base + %v", tc.what, got.Sub(base), tc.takeable)
		}
		clock = want.Add(-time.Millisecond)
		if !r.heldByOthers(grace).has(7) {
			t.Errorf("%s: bucket 7 free 1 ms before base + %v, want it held until then", tc.what, tc.takeable)
		}
		clock = want
		if r.heldByOthers(grace).has(7) {
			t.Errorf("%s: bucket 7 held at base + %v, want it free from then", tc.what, tc.takeable)
		}
		if got := r.nextTakeable(grace); !got.IsZero() {
			t.Errorf("%s: next takeable at base + %v once free, want none ahead", tc.what, got.Sub(base))
		}
	}
}
