package k8s

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestShardRingMembership runs members of one ring on a real API server:
// they see each other join; one that stops cleanly leaves at once (its
// Lease deleted); one that stops renewing (as a killed process would)
// leaves once its Lease expired, not before; a ring of another name is
// not seen. What a member announces is read by the others.
func TestShardRingMembership(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	const dur, tick = 3 * time.Second, 100 * time.Millisecond
	cfg := Shards{Namespace: ns, LeaseDuration: dur, RenewPeriod: tick}
	ring := func(name, id string) *shardRing {
		r, err := newShardRing(cs.CoordinationV1(), cfg, name, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	failed := func(err error) { t.Errorf("ring: %v", err) }
	start := func(r *shardRing) (stop func() error) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.run(ctx, failed) }()
		return sync.OnceValue(func() error { cancel(); return <-done })
	}
	sees := func(r *shardRing, want ...string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, changed := r.Members()
			if slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s sees members %v, want %v", r.id, got, want)
			}
			select {
			case <-changed:
			case <-time.After(tick):
			}
		}
	}

	a, b, c := ring("webapp", "a"), ring("webapp", "b"), ring("webapp", "c")
	other := ring("cronjob", "x")
	stopA, stopB := start(a), start(b)
	defer func() { _ = stopA() }()
	stopOther := start(other)
	defer func() { _ = stopOther() }()
	sees(a, "a", "b")
	sees(b, "a", "b")
	sees(other, "x")

	// c renews by hand, so that it can stop as a killed process does:
	// without deleting its Lease. Its renewal is dated by the Lease's
	// renewTime, which c sets before it sends the update: the time taken
	// just before the call is no later than that.
	lastRenewal := time.Now()
	if err := c.renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	sees(a, "a", "b", "c")
	sees(b, "a", "b", "c")

	want := bucketsOf(assign([]string{"a", "b", "c"}), "a")
	a.Announce(want)
	deadline := time.Now().Add(10 * time.Second)
	for {
		holds, live := b.Holds("a")
		if holds == want && live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b reads a's holds %q (live %v), want %q", holds, live, want)
		}
		time.Sleep(tick)
	}

	if got := b.heldByOthers(0); got != want {
		t.Fatalf("b finds %v held by others, want a's %v", got, want)
	}

	// b stops cleanly: gone at once, long before its Lease would expire.
	left := time.Now()
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	sees(a, "a", "c")
	if took := time.Since(left); took > dur/2 {
		t.Errorf("a member that left cleanly was seen gone after %v, want well within the lease duration %v", took, dur)
	}

	// c stopped renewing: still a member until its Lease expires.
	if got, _ := a.Members(); time.Since(lastRenewal) < dur-time.Second && !slices.Contains(got, "c") {
		t.Fatalf("c was dropped %v after its last renewal, before its lease of %v expired", time.Since(lastRenewal), dur)
	}
	sees(a, "a")
	if since := time.Since(lastRenewal); since < dur {
		t.Errorf("c was dropped %v after its last renewal, before its lease of %v expired", since, dur)
	}
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), a.lease, metav1.GetOptions{}); err == nil {
		t.Error("a's Lease is still there after it stopped cleanly")
	}
}
