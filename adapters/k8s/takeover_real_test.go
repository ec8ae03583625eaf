package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestTakeoverWaitsForOldLeader runs two replicas on one Lease. The
// leader's handler blocks until its context is cancelled; then the Lease
// is handed to the other replica, which takes it at once. The old leader
// must cancel its handler when it sees the loss (its ShutdownTimeout of a
// minute plays no part), with ErrLeadershipLost as the cause, and the
// handler must have ended before the new leader's run of the same handler
// on the same value starts: the overlap is zero.
func TestTakeoverWaitsForOldLeader(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	type span struct {
		who        string
		start, end time.Time
		cause      error
	}
	var (
		mu    sync.Mutex
		spans []span
	)
	run := func(who string) (chan error, context.CancelFunc) {
		le := &k8s.LeaderElection{Namespace: ns, Name: "takeover", Identity: who,
			LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 250 * time.Millisecond}
		src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Logger: testLogger(t),
			Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}, LeaderElection: le})
		if err != nil {
			t.Fatal(err)
		}
		bus, err := opbus.New(src.BusOptions(&opbus.Options{ShutdownTimeout: time.Minute}))
		if err != nil {
			t.Fatal(err)
		}
		must(t, bus.Handle("block", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			mu.Lock()
			i := len(spans)
			spans = append(spans, span{who: who, start: time.Now()})
			mu.Unlock()
			if who == "second" {
				return opbus.Active(""), nil // the new leader's run; the test ends
			}
			<-ctx.Done()
			mu.Lock()
			spans[i].end = time.Now()
			spans[i].cause = context.Cause(ctx)
			mu.Unlock()
			return opbus.Status{}, ctx.Err()
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx, bus) }()
		return done, cancel
	}
	createWidget(t, c, ns, "w", `{"size":1}`)
	firstDone, cancelFirst := run("first")
	defer func() { cancelFirst(); <-firstDone }()
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	eventually(t, "first leads", func() bool {
		l, err := c.Resource(leases).Namespace(ns).Get(context.Background(), "takeover", metav1.GetOptions{})
		return err == nil && l.Object["spec"].(map[string]any)["holderIdentity"] == "first"
	})
	secondDone, cancelSecond := run("second")
	defer func() { cancelSecond(); <-secondDone }()
	time.Sleep(time.Second) // first's handler is running, second campaigns

	// The Lease is handed to the second replica behind the first's back.
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	patch(t, c, leases, ns, "takeover", fmt.Sprintf(`{"spec":{"holderIdentity":"second","renewTime":%q,"acquireTime":%q}}`, now, now))
	var lostAt time.Time
	select {
	case err := <-firstDone:
		lostAt = time.Now()
		firstDone <- err
		if !errors.Is(err, k8s.ErrLeadershipLost) {
			t.Fatalf("first's Run: got %v, want ErrLeadershipLost", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the first leader kept running without its Lease")
	}
	var old, next span
	eventually(t, "second's handler starts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range spans {
			switch s.who {
			case "first":
				old = s
			case "second":
				next = s
			}
		}
		return !old.end.IsZero() && !next.start.IsZero()
	})
	overlap := old.end.Sub(next.start)
	t.Logf("first's handler ran %v, ended %v before first's Run returned and %v before second's started (overlap %v)",
		old.end.Sub(old.start).Round(time.Millisecond), lostAt.Sub(old.end).Round(time.Millisecond),
		(-overlap).Round(time.Millisecond), max(overlap, 0))
	if old.end.After(lostAt) {
		t.Errorf("first's handler ended %v after its Run returned", old.end.Sub(lostAt).Round(time.Millisecond))
	}
	if !errors.Is(old.cause, k8s.ErrLeadershipLost) || !errors.Is(old.cause, opbus.ErrHalt) {
		t.Errorf("first's handler's context cause = %v, want ErrLeadershipLost and opbus.ErrHalt", old.cause)
	}
	if overlap > 0 {
		t.Errorf("the new leader's handler started %v before the old leader's ended", overlap.Round(time.Millisecond))
	}
}
