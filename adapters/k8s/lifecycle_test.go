package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestRestart stops the operator, changes a subscribed field of one object
// and starts a new operator: the handler of that field runs once, on that
// object only, because the digests of what the first operator handled are
// in the objects' records.
func TestRestart(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	opts := k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}

	var first runs
	op := start(t, opts, widgetHandlers(t, &first))
	createWidget(t, c, ns, "changed", `{"size":1}`)
	createWidget(t, c, ns, "same", `{"size":1}`)
	eventually(t, "the first operator handles both", func() bool {
		return first.count("size", "changed") == 1 && first.count("size", "same") == 1
	})
	op.stop(t)

	patch(t, c, widgetsGVR, ns, "changed", `{"spec":{"size":2}}`)

	var second runs
	start(t, opts, widgetHandlers(t, &second))
	eventually(t, "the second operator handles the change made while none ran", func() bool {
		return second.count("size", "changed") == 1
	})
	steady(t, "handler runs of the second operator", 2*time.Second, second.total)
	ev := second.of("size", "changed")[0]
	if ev.Type != opbus.Update || ev.Old != nil {
		t.Errorf("size ran as %v with old %v, want update with no old state (a new process)", ev.Type, ev.Old)
	}
	if got := fmt.Sprint(second.events); second.total() != 2 || second.count("all", "changed") != 1 {
		t.Errorf("second operator ran %d handlers, want size and all on changed only: %s", second.total(), got)
	}
	if n := second.count("size", "same") + second.count("all", "same") + second.count("my phase", "same"); n != 0 {
		t.Errorf("handlers ran %d times on the unchanged object", n)
	}
	if first.count("size", "changed") != 1 {
		t.Errorf("the stopped operator ran again")
	}
}

// TestFinalizer checks that a delete handler runs once per deletion:
// while the operator runs, and for an object deleted while it was down,
// which its finalizer kept until the next operator handled it.
func TestFinalizer(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	opts := k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}, Finalizer: true}}}
	handlers := func(r *runs) func(b *opbus.Bus) {
		return func(b *opbus.Bus) {
			must(t, b.Handle("size", r.handler(nil), opbus.On{Fields: []string{"spec.size"}}))
			must(t, b.Handle("cleanup", r.handler(nil), opbus.On{Types: []opbus.EventType{opbus.Delete}}))
		}
	}
	hasFinalizer := func(name string) bool {
		return slices.Contains(get(t, c, widgetsGVR, ns, name).GetFinalizers(), k8s.Finalizer)
	}
	gone := func(name string) func() bool {
		return func() bool {
			_, err := c.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}
	}
	del := func(name string) {
		t.Helper()
		if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var first runs
	op := start(t, opts, handlers(&first))
	createWidget(t, c, ns, "a", `{"size":1}`)
	eventually(t, "a is claimed with the finalizer and handled", func() bool { return hasFinalizer("a") && first.count("size", "a") == 1 })
	if ev := first.of("size", "a")[0]; !slices.Contains(ev.New["metadata"].(map[string]any)["finalizers"].([]any), any(k8s.Finalizer)) {
		t.Errorf("the first handler ran before the finalizer was added: %v", ev.New["metadata"])
	}
	del("a")
	eventually(t, "a's delete handler runs and a goes", func() bool { return first.count("cleanup", "a") == 1 && gone("a")() })
	ev := first.of("cleanup", "a")[0]
	if ev.Type != opbus.Delete || ev.Old == nil || ev.New != nil {
		t.Errorf("cleanup got %v with old %v, new %v; want delete with the last state as old", ev.Type, ev.Old != nil, ev.New)
	}

	createWidget(t, c, ns, "b", `{"size":1}`)
	eventually(t, "b is claimed and handled", func() bool { return hasFinalizer("b") && first.count("size", "b") == 1 })
	op.stop(t)
	del("b") // the operator is down: the finalizer keeps b
	time.Sleep(500 * time.Millisecond)
	if gone("b")() {
		t.Fatal("b went without its delete handler: the finalizer did not hold it")
	}

	var second runs
	start(t, opts, handlers(&second))
	eventually(t, "the second operator runs b's delete handler and b goes", func() bool {
		return second.count("cleanup", "b") == 1 && gone("b")()
	})
	steady(t, "handler runs", time.Second, func() int { return first.total() + second.total() })
	if n := first.count("cleanup", "a") + second.count("cleanup", "a"); n != 1 {
		t.Errorf("cleanup ran %d times on a, want once", n)
	}
	if n := second.total(); n != 1 {
		t.Errorf("the second operator ran %d handlers, want only b's cleanup: %v", n, second.events)
	}
}

// TestLeaderElection runs two operators on one Lease: only the leader
// handles; when it stops, the other takes over within the lease duration
// and handles the next change, and nothing is handled twice.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	le := &k8s.LeaderElection{Namespace: ns, Name: "widgets", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
	opts := func(id string) k8s.Options {
		l := *le
		l.Identity = id
		return k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}, LeaderElection: &l}
	}
	var ra, rb runs
	a := start(t, opts("a"), widgetHandlers(t, &ra))
	b := start(t, opts("b"), widgetHandlers(t, &rb))

	createWidget(t, c, ns, "one", `{"size":1}`)
	eventually(t, "one operator handles one", func() bool { return ra.count("size", "one")+rb.count("size", "one") == 1 })
	leader, lr, fr := a, &ra, &rb
	if rb.count("size", "one") == 1 {
		leader, lr, fr = b, &rb, &ra
	}
	steady(t, "handler runs", time.Second, func() int { return ra.total() + rb.total() })
	if fr.total() != 0 {
		t.Fatalf("the follower handled %d events while the other led: %v", fr.total(), fr.events)
	}

	leader.stop(t)
	stopped := time.Now()
	patch(t, c, widgetsGVR, ns, "one", `{"spec":{"size":2}}`)
	eventually(t, "the follower takes over and handles the change", func() bool { return fr.count("size", "one") == 1 })
	took := time.Since(stopped)
	t.Logf("takeover: %v", took.Round(time.Millisecond))
	if took > le.LeaseDuration {
		t.Errorf("takeover took %v, longer than the lease duration %v", took, le.LeaseDuration)
	}
	if ev := fr.of("size", "one")[0]; ev.Type != opbus.Update {
		t.Errorf("the follower ran size as %v, want update: it must not handle again what the leader handled", ev.Type)
	}
	createWidget(t, c, ns, "two", `{"size":1}`)
	eventually(t, "the new leader handles a new object", func() bool { return fr.count("size", "two") == 1 })
	steady(t, "handler runs", time.Second, func() int { return ra.total() + rb.total() })
	for _, name := range []string{"one", "two"} {
		for _, h := range []string{"size", "all", "my phase"} {
			for _, typ := range []opbus.EventType{opbus.Create, opbus.Update} {
				if n := lr.count(h, name, typ) + fr.count(h, name, typ); n > 1 {
					t.Errorf("%s ran %d times on %s as %v, want at most once", h, n, name, typ)
				}
			}
		}
	}
}

// TestLeadershipLost takes the Lease away from a running leader: it stops
// handling within the renew deadline and Run returns ErrLeadershipLost.
func TestLeadershipLost(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	le := &k8s.LeaderElection{Namespace: ns, Name: "widgets", Identity: "leader",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 250 * time.Millisecond}
	src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Logger: testLogger(t),
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}, LeaderElection: le})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	var r runs
	widgetHandlers(t, &r)(bus)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, bus) }()

	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the leader handles", func() bool { return r.count("size", "w") == 1 })

	// Someone else holds the Lease now, for a minute.
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	patch(t, c, leases, ns, "widgets", fmt.Sprintf(`{"spec":{"holderIdentity":"thief","leaseDurationSeconds":60,"renewTime":%q,"acquireTime":%q}}`, now, now))
	select {
	case err := <-done:
		if !errors.Is(err, k8s.ErrLeadershipLost) {
			t.Fatalf("Run: got %v, want ErrLeadershipLost", err)
		}
		t.Logf("Run: %v", err)
	case <-time.After(waitFor):
		t.Fatal("the leader kept running without its Lease")
	}
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	steady(t, "handler runs after leadership was lost", time.Second, r.total)
}
