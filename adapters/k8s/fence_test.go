package k8s

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/opbus/opbus"
)

// TestLeaseLockDeadline: the deadline is the start of the last successful
// acquire or renew for the lock's own identity plus the renew deadline;
// a write for another holder, or a failed one, does not move it.
func TestLeaseLockDeadline(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	l, err := NewLeaseLock(leases, "ns", "lease", "me", 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Deadline().IsZero() {
		t.Fatalf("deadline before acquiring: %v, want zero", l.Deadline())
	}
	ctx := context.Background()
	before := time.Now()
	if err := l.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if d := l.Deadline(); d.Before(before.Add(2*time.Second)) || d.After(after.Add(2*time.Second)) {
		t.Fatalf("deadline after acquiring: %v, want within [%v, %v] + 2s", d, before, after)
	}
	first := l.Deadline()
	time.Sleep(10 * time.Millisecond)
	if _, _, err := l.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if !l.Deadline().After(first) {
		t.Fatalf("a renew did not move the deadline: %v, was %v", l.Deadline(), first)
	}
	renewed := l.Deadline()
	if _, _, err := l.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "other"}); err != nil {
		t.Fatal(err)
	}
	if l.Deadline() != renewed {
		t.Fatalf("a write for another holder moved the deadline")
	}
	if _, err := NewLeaseLock(leases, "", "lease", "me", time.Second, nil); err == nil || !strings.Contains(err.Error(), "namespace and a name") {
		t.Errorf("NewLeaseLock without a namespace: %v", err)
	}
	if _, err := NewLeaseLock(leases, "ns", "lease", "me", 0, nil); err == nil || !strings.Contains(err.Error(), "renew deadline") {
		t.Errorf("NewLeaseLock without a renew deadline: %v", err)
	}
}

// TestLeaseLockReleasesOnlyItsOwn: client-go's elector releases the Lease
// on its own view of who holds it, which a leader paused past its Lease
// has not updated; the lock refuses a release when the Get before it
// found another holder, and makes it when the Lease is its own.
func TestLeaseLockReleasesOnlyItsOwn(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	ctx := context.Background()
	mine, _ := NewLeaseLock(leases, "ns", "lease", "old", time.Second, nil)
	theirs, _ := NewLeaseLock(leases, "ns", "lease", "new", time.Second, nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mine.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "old"}))
	_, _, err := theirs.Get(ctx)
	must(err)
	must(theirs.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "new"}))

	_, _, err = mine.Get(ctx)
	must(err)
	if err := mine.Update(ctx, resourcelock.LeaderElectionRecord{}); err == nil || !strings.Contains(err.Error(), `held by "new"`) {
		t.Fatalf("releasing another's Lease: %v, want a refusal", err)
	}
	rec, _, err := theirs.Get(ctx)
	must(err)
	if rec.HolderIdentity != "new" {
		t.Fatalf("holder after the refused release: %q", rec.HolderIdentity)
	}
	must(theirs.Update(ctx, resourcelock.LeaderElectionRecord{}))
	if rec, _, _ := theirs.Get(ctx); rec.HolderIdentity != "" {
		t.Fatalf("holder after its own release: %q", rec.HolderIdentity)
	}
}

// TestFenceLostAtDeadline: a fence holds until its deadline, on the
// process's clock, and is then lost for good, once, with a cause wrapping
// opbus.ErrHalt and ErrLeadershipLost, even when its deadline moves
// later: it halts the lead's context at the deadline without being asked
// (its timer) and at the first check after it (a process resumed after
// a pause may check before its timer fires). Once lost, the Source's
// transport refuses every write and lets reads through, its handlers are
// refused, and it neither leads nor is ready.
func TestFenceLostAtDeadline(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	s, err := New(&Options{Config: &rest.Config{Host: srv.URL}, Resources: []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var deadline atomic.Pointer[time.Time]
	set := func(d time.Time) { deadline.Store(&d) }
	set(time.Now().Add(300 * time.Millisecond))
	ctx, end := s.fenced(context.Background(), func() time.Time { return *deadline.Load() }, "Lease ns/l")
	defer end()
	s.probe.set(func(p *probeState) { p.started, p.electing, p.leading, p.synced = true, true, true, true })
	runs := s.BusOptions(nil).Runs

	if !s.holds() || !runs("h") || !s.Leading() || s.Ready() != nil {
		t.Fatal("the fence does not hold before its deadline")
	}
	hc := s.fencedClient(http.DefaultClient)
	post := func() error {
		resp, err := hc.Post(srv.URL, "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := post(); err != nil {
		t.Fatalf("a write before the deadline: %v", err)
	}
	set(time.Now().Add(400 * time.Millisecond)) // a renewal
	begin := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lead's context was not cancelled at the deadline")
	}
	if took := time.Since(begin); took < 350*time.Millisecond {
		t.Errorf("cancelled %v after a renewal that moved the deadline 400ms on", took)
	}
	cause := context.Cause(ctx)
	if !errors.Is(cause, opbus.ErrHalt) || !errors.Is(cause, ErrLeadershipLost) {
		t.Errorf("cause %v: want opbus.ErrHalt and ErrLeadershipLost", cause)
	}
	set(time.Now().Add(time.Hour)) // a renewal that landed too late
	if s.holds() || runs("h") || s.Leading() {
		t.Error("the fence holds again after a late renewal")
	}
	if err := s.Ready(); !errors.Is(err, ErrNotReady) || !errors.Is(err, ErrLeadershipLost) {
		t.Errorf("Ready after the deadline: %v", err)
	}
	n := served.Load()
	if err := post(); !errors.Is(err, ErrLeadershipLost) {
		t.Errorf("a write after the deadline: %v, want refused with ErrLeadershipLost", err)
	}
	if served.Load() != n {
		t.Error("a refused write reached the server")
	}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatalf("a read after the deadline: %v", err)
	}
	resp.Body.Close()
}

// TestFenceCheckedBeforeTimer: a process resumed after a pause past its
// deadline finds the fence lost at its first check, before the fence's
// timer has fired.
func TestFenceCheckedBeforeTimer(t *testing.T) {
	s, err := New(&Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, Resources: []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}}})
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Millisecond)
	f := &fence{deadline: func() time.Time { return past }}
	lost := 0
	f.lose = func(error) { lost++ }
	s.fence.Store(f)
	if s.holds() {
		t.Fatal("a fence past its deadline holds")
	}
	if s.holds() || lost != 1 {
		t.Fatalf("lost %d times, want once", lost)
	}
}

// TestFencedConnRefusesWrites: a connection of the Source's own client
// writes while the fence holds and nothing once it is lost, so that a
// request that passed the transport's check just before the process was
// paused does not go out when it resumes past its deadline.
func TestFencedConnRefusesWrites(t *testing.T) {
	s, err := New(&Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, Resources: []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var until atomic.Pointer[time.Time]
	d := time.Now().Add(time.Hour)
	until.Store(&d)
	f := &fence{deadline: func() time.Time { return *until.Load() }, lose: func(error) {}}
	s.fence.Store(f)
	a, b := net.Pipe()
	defer b.Close()
	dial := s.fencedDial(func(context.Context, string, string) (net.Conn, error) { return a, nil })
	c, err := dial(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, b) }()
	if _, err := c.Write([]byte("before")); err != nil {
		t.Fatalf("a write while the fence holds: %v", err)
	}
	past := time.Now().Add(-time.Millisecond)
	until.Store(&past)
	if n, err := c.Write([]byte("after")); n != 0 || !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("a write past the deadline: %d, %v; want 0 and ErrLeadershipLost", n, err)
	}
}
