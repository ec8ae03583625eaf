package k8s_test

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestFenceTwoReplicas and TestFenceThreeReplicas run the operator of
// replica_test.go as separate processes on one Lease (3 s, renew deadline
// 2 s, retry 0.5 s); its handler applies a Widget's spec.version to four
// ConfigMaps, each naming the replica that wrote it. The leader is
// stopped with SIGSTOP past its Lease; another takes over and handles
// versions 2 and 3; the old leader is resumed with SIGCONT. From then on
// it must never report opbus_leader 1 or /readyz 200, and it must exit
// having lost its Lease; counted at the objects, by a watch of the
// test's own, it writes nothing past its renew deadline (which passed
// while it was stopped), no object changes after it resumed, the
// children keep version 3 (no value lost) and the new leader then
// handles version 4. At no scrape do two replicas report opbus_leader 1.
// Then SIGTERM and SIGKILL of the leader are timed until another replica
// reports opbus_leader 1 and handles a new version; after SIGTERM, the
// Lease no longer names the stopped leader once it has exited (released,
// not left to expire).
func TestFenceTwoReplicas(t *testing.T) { testFence(t, 2) }

func TestFenceThreeReplicas(t *testing.T) { testFence(t, 3) }

// The Lease of the fencing tests. A 2 s renew deadline made a leader on a
// loaded 2-core machine (the API server, several replicas and other test
// packages at once) miss its own renewals and fence itself, failing the
// hand-over it was to make; 4 s leaves room for such stalls.
const (
	fenceLease = 5 * time.Second
	fenceRenew = 4 * time.Second
	fenceRetry = 500 * time.Millisecond
	fenceKids  = 4
)

func testFence(t *testing.T, n int) {
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	kubeconfig := env.WriteKubeconfig(t, nil)
	config := func(i int) replicaConfig {
		return replicaConfig{Kubeconfig: kubeconfig, Namespace: ns, Identity: fmt.Sprintf("r%d", i),
			Lease: fenceLease, Renew: fenceRenew, Retry: fenceRetry, Children: fenceKids}
	}
	writes := watchWrites(t, c, ns)
	mon := &leaderMonitor{done: make(chan struct{}), stopped: make(chan struct{})}

	old := startReplica(t, config(0))
	mon.add(old)
	go mon.run()
	defer mon.stop(t)
	eventually(t, "r0 leads", func() bool { v, _ := old.leader(); return v == 1 })
	var standby []*replica
	for i := 1; i < n; i++ {
		r := startReplica(t, config(i))
		mon.add(r)
		standby = append(standby, r)
	}
	createWidget(t, c, ns, "w", `{"version":1}`)
	waitChildren(t, c, ns, "1", old.id)

	// The leader freezes past its Lease; another takes over and handles
	// two changes.
	stoppedAt := time.Now()
	old.signal(t, syscall.SIGSTOP)
	next, took := waitLeader(t, standby, stoppedAt)
	t.Logf("SIGSTOP of the leader: %s leads after %v", next.id, took.Round(time.Millisecond))
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"version":2}}`)
	waitChildren(t, c, ns, "2", next.id)
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"version":3}}`)
	waitChildren(t, c, ns, "3", next.id)
	eventually(t, "the Widget's status says version 3", func() bool {
		for _, cond := range conditionsOf(get(t, c, widgetsGVR, ns, "w")) {
			if cond.Message == "version 3" {
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond) // the new leader's record write lands

	// The old leader resumes: it must neither lead nor write.
	resumedAt := time.Now()
	old.signal(t, syscall.SIGCONT)
	for deadline := resumedAt.Add(waitFor); !old.exited(); {
		if time.Now().After(deadline) {
			t.Fatalf("the old leader did not exit within %v of SIGCONT", waitFor)
		}
		if v, ok := old.leader(); ok && v == 1 {
			t.Errorf("the old leader reports opbus_leader 1 %v after SIGCONT", time.Since(resumedAt).Round(time.Millisecond))
		}
		if code := old.ready(); code == 200 {
			t.Errorf("the old leader's /readyz answers 200 %v after SIGCONT", time.Since(resumedAt).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the old leader exited %v after SIGCONT with code %d", time.Since(resumedAt).Round(time.Millisecond), old.code)
	if old.code != replicaLost {
		t.Errorf("the old leader exited with %d, want %d (ErrLeadershipLost)", old.code, replicaLost)
	}
	time.Sleep(time.Second) // a late write would be seen by now
	// Its deadline is at most the renew deadline after SIGSTOP (its last
	// renewal began before); the watch sees a write a few milliseconds
	// after it lands.
	for _, w := range writes.since(stoppedAt.Add(fenceRenew)) {
		if w.writer == old.id {
			t.Errorf("the old leader wrote %s %s (version %s) %v after SIGSTOP, past its renew deadline %v",
				w.kind, w.name, w.version, w.at.Sub(stoppedAt).Round(time.Millisecond), fenceRenew)
		}
	}
	for _, w := range writes.since(resumedAt) {
		t.Errorf("%s %s written %v after the old leader resumed (writer %q, version %q): nothing was left to write",
			w.kind, w.name, w.at.Sub(resumedAt).Round(time.Millisecond), w.writer, w.version)
	}
	waitChildren(t, c, ns, "3", next.id) // no value lost
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"version":4}}`)
	waitChildren(t, c, ns, "4", next.id)

	// Hand-overs: SIGTERM releases the Lease, SIGKILL leaves it to expire.
	spare := startReplica(t, config(n))
	mon.add(spare)
	others := append(without(standby, next), spare)
	termAt := time.Now()
	next.signal(t, syscall.SIGTERM)
	byTermCh := make(chan time.Duration, 1)
	go func() { // the hand-over, measured while the old leader exits
		for deadline := time.Now().Add(waitFor); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, r := range others {
				if v, ok := r.leader(); ok && v == 1 {
					byTermCh <- time.Since(termAt)
					return
				}
			}
		}
		byTermCh <- 0
	}()
	<-next.done
	if h := leaseHolder(t, c, ns, "fence"); h == next.id {
		t.Errorf("the Lease still names %s after its clean stop: not released", h)
	}
	if next.code != replicaClean {
		t.Errorf("%s exited with %d after SIGTERM, want 0", next.id, next.code)
	}
	after, _ := waitLeader(t, others, termAt)
	byTerm := <-byTermCh
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"version":5}}`)
	waitChildren(t, c, ns, "5", after.id)
	handledByTerm := time.Since(termAt)

	spare2 := startReplica(t, config(n+1))
	mon.add(spare2)
	others = append(without(others, after), spare2)
	killAt := time.Now()
	after.signal(t, syscall.SIGKILL)
	last, byKill := waitLeader(t, others, killAt)
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"version":6}}`)
	waitChildren(t, c, ns, "6", last.id)
	handledByKill := time.Since(killAt)
	t.Logf("%d replicas: SIGTERM hand-over %v (version 5 handled %v after the signal); SIGKILL hand-over %v (version 6 handled %v after)",
		n, byTerm.Round(time.Millisecond), handledByTerm.Round(time.Millisecond), byKill.Round(time.Millisecond), handledByKill.Round(time.Millisecond))
}

var leasesGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// leaseHolder returns the holder of the Lease ns/name.
func leaseHolder(t *testing.T, c dynamic.Interface, ns, name string) string {
	t.Helper()
	h, _, _ := unstructured.NestedString(get(t, c, leasesGVR, ns, name).Object, "spec", "holderIdentity")
	return h
}

// without returns rs without r.
func without(rs []*replica, r *replica) []*replica {
	var out []*replica
	for _, x := range rs {
		if x != r {
			out = append(out, x)
		}
	}
	return out
}

// waitLeader waits until one of rs reports opbus_leader 1 and returns it
// and how long after since that was.
func waitLeader(t *testing.T, rs []*replica, since time.Time) (*replica, time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(waitFor); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, r := range rs {
			if v, ok := r.leader(); ok && v == 1 {
				return r, time.Since(since)
			}
		}
	}
	t.Fatalf("no replica leads within %v", waitFor)
	return nil, 0
}

// waitChildren waits until every child ConfigMap of Widget w holds
// version, written by writer.
func waitChildren(t *testing.T, c dynamic.Interface, ns, version, writer string) {
	t.Helper()
	eventually(t, fmt.Sprintf("children at version %s by %s", version, writer), func() bool {
		for i := range fenceKids {
			u, err := c.Resource(configMapsGVR).Namespace(ns).Get(t.Context(), fmt.Sprintf("w-%d", i), metav1.GetOptions{})
			if err != nil {
				return false
			}
			data, _, _ := unstructured.NestedStringMap(u.Object, "data")
			if data["version"] != version || data["writer"] != writer {
				return false
			}
		}
		return true
	})
}

// objectWrite is a change of an object that the test's watch saw.
type objectWrite struct {
	at                    time.Time
	kind, name            string
	writer, version       string // a child's data
	resourceVersion, verb string
}

// writeLog collects the writes to a namespace's Widgets and ConfigMaps.
type writeLog struct {
	mu sync.Mutex
	ws []objectWrite
}

// since returns the writes seen after t.
func (l *writeLog) since(t time.Time) []objectWrite {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []objectWrite
	for _, w := range l.ws {
		if w.at.After(t) {
			out = append(out, w)
		}
	}
	return out
}

// watchWrites watches ns's Widgets and ConfigMaps until the test ends.
func watchWrites(t *testing.T, c dynamic.Interface, ns string) *writeLog {
	t.Helper()
	l := &writeLog{}
	for _, gvr := range []schema.GroupVersionResource{widgetsGVR, configMapsGVR} {
		w, err := c.Resource(gvr).Namespace(ns).Watch(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		go func() {
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
					continue
				}
				data, _, _ := unstructured.NestedStringMap(u.Object, "data")
				l.mu.Lock()
				l.ws = append(l.ws, objectWrite{at: time.Now(), kind: u.GetKind(), name: u.GetName(),
					writer: data["writer"], version: data["version"], resourceVersion: u.GetResourceVersion(), verb: string(ev.Type)})
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// leaderMonitor scrapes the replicas' opbus_leader every 50 ms and notes
// every round in which more than one reports 1.
type leaderMonitor struct {
	mu      sync.Mutex
	rs      []*replica
	rounds  int
	doubles []string
	done    chan struct{}
	stopped chan struct{}
}

func (m *leaderMonitor) add(r *replica) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rs = append(m.rs, r)
}

func (m *leaderMonitor) run() {
	defer close(m.stopped)
	for {
		select {
		case <-m.done:
			return
		case <-time.After(50 * time.Millisecond):
		}
		m.mu.Lock()
		rs := append([]*replica(nil), m.rs...)
		m.mu.Unlock()
		var leaders []string
		for _, r := range rs {
			if v, ok := r.leader(); ok && v == 1 {
				leaders = append(leaders, r.id)
			}
		}
		m.mu.Lock()
		m.rounds++
		if len(leaders) > 1 {
			m.doubles = append(m.doubles, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), leaders))
		}
		m.mu.Unlock()
	}
}

// stop ends the monitor and fails the test if two replicas led at once.
func (m *leaderMonitor) stop(t *testing.T) {
	close(m.done)
	<-m.stopped
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Logf("opbus_leader scraped in %d rounds", m.rounds)
	for _, d := range m.doubles {
		t.Errorf("two replicas reported opbus_leader 1 in one round at %s", d)
	}
}
