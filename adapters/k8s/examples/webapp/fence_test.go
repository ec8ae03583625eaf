package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// TestFenceManagerReplicas runs two, then three, webapp processes with
// --leader-elect on one Lease (3 s, renew deadline 2 s, retry 0.5 s):
// opbus inside controller-runtime managers made by ctrlmgr.NewManager.
// The leader is stopped with SIGSTOP past its Lease; another takes over
// and rolls the Deployment to images 2 and 3; the old leader is resumed
// with SIGCONT. It must never report opbus_leader 1 or /readyz 200 again
// and must exit; counted at the objects by a watch of the test's own, no
// WebApp, Deployment or Service is written after it resumed (nothing was
// left to write: the Deployment is not rolled back), the Deployment keeps
// image 3 and the new leader then rolls it to 4. At no scrape do two
// replicas report opbus_leader 1. SIGTERM (the Lease released once the
// bus drained: it no longer names the stopped replica once that exited)
// and SIGKILL hand-overs are timed.
func TestFenceManagerReplicas(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) { testFenceManager(t, n) })
	}
}

func testFenceManager(t *testing.T, n int) {
	env, c := newCluster(t)
	kubeconfig := env.WriteKubeconfig(t, nil)
	args := []string{"--leader-elect", "--leader-election-namespace=" + c.ns, "--probe-interval=1h",
		"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=500ms"}
	writes := c.watchWrites(t)
	mon := &monitor{done: make(chan struct{}), stopped: make(chan struct{})}

	old := startOperator(t, kubeconfig, args...)
	mon.add(old)
	go mon.run()
	defer mon.stop(t)
	eventually(t, "the first replica leads", func() string {
		if v, _ := leaderOf(old); v != 1 {
			return "opbus_leader is not 1"
		}
		return ""
	})
	var standby []*operatorProcess
	for range n - 1 {
		p := startOperator(t, kubeconfig, args...)
		mon.add(p)
		standby = append(standby, p)
	}
	c.createWebApp(t, "app", map[string]any{"image": "web:1", "replicas": int64(1)})
	c.waitImage(t, "web:1")

	stoppedAt := time.Now()
	signal(t, old, syscall.SIGSTOP)
	next, took := waitLeading(t, standby, stoppedAt)
	t.Logf("SIGSTOP of the leader: another leads after %v", took.Round(time.Millisecond))
	c.patchWebApp(t, "app", `{"spec":{"image":"web:2"}}`)
	c.waitImage(t, "web:2")
	c.patchWebApp(t, "app", `{"spec":{"image":"web:3"}}`)
	c.waitImage(t, "web:3")
	c.waitQuiet(t, "app")

	resumedAt := time.Now()
	signal(t, old, syscall.SIGCONT)
	for deadline := resumedAt.Add(waitFor); !exited(old); {
		if time.Now().After(deadline) {
			t.Fatalf("the old leader did not exit within %v of SIGCONT", waitFor)
		}
		if v, ok := leaderOf(old); ok && v == 1 {
			t.Errorf("the old leader reports opbus_leader 1 %v after SIGCONT", time.Since(resumedAt).Round(time.Millisecond))
		}
		if code := readyOf(old); code == http.StatusOK {
			t.Errorf("the old leader's /readyz answers 200 %v after SIGCONT", time.Since(resumedAt).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the old leader exited %v after SIGCONT: %v", time.Since(resumedAt).Round(time.Millisecond), old.exitErr)
	time.Sleep(time.Second) // a late write would be seen by now
	for _, w := range writes.since(resumedAt) {
		t.Errorf("%s written %v after the old leader resumed: nothing was left to write", w.what, w.at.Sub(resumedAt).Round(time.Millisecond))
	}
	c.waitImage(t, "web:3") // no value lost
	c.patchWebApp(t, "app", `{"spec":{"image":"web:4"}}`)
	c.waitImage(t, "web:4")

	spare := startOperator(t, kubeconfig, args...)
	mon.add(spare)
	others := append(withoutProcess(standby, next), spare)
	holder := c.leaseHolder(t)
	termAt := time.Now()
	signal(t, next, syscall.SIGTERM)
	byTermCh := make(chan time.Duration, 1)
	go func() { // the hand-over, measured while the old leader exits
		for deadline := time.Now().Add(waitFor); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, p := range others {
				if v, ok := leaderOf(p); ok && v == 1 {
					byTermCh <- time.Since(termAt)
					return
				}
			}
		}
		byTermCh <- 0
	}()
	<-next.done
	if h := c.leaseHolder(t); h == holder {
		t.Errorf("the Lease still names %s after its clean stop: not released", h)
	}
	if next.exitErr != nil {
		t.Errorf("the leader exited with %v after SIGTERM", next.exitErr)
	}
	after, _ := waitLeading(t, others, termAt)
	byTerm := <-byTermCh
	c.patchWebApp(t, "app", `{"spec":{"image":"web:5"}}`)
	c.waitImage(t, "web:5")
	handledByTerm := time.Since(termAt)

	spare2 := startOperator(t, kubeconfig, args...)
	mon.add(spare2)
	others = append(withoutProcess(others, after), spare2)
	killAt := time.Now()
	signal(t, after, syscall.SIGKILL)
	_, byKill := waitLeading(t, others, killAt)
	c.patchWebApp(t, "app", `{"spec":{"image":"web:6"}}`)
	c.waitImage(t, "web:6")
	handledByKill := time.Since(killAt)
	t.Logf("%d replicas: SIGTERM hand-over %v (image 5 rolled out %v after the signal); SIGKILL hand-over %v (image 6 %v after)",
		n, byTerm.Round(time.Millisecond), handledByTerm.Round(time.Millisecond), byKill.Round(time.Millisecond), handledByKill.Round(time.Millisecond))
}

func signal(t *testing.T, p *operatorProcess, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v: %v", sig, err)
	}
	if sig == syscall.SIGSTOP {
		// Resumed at the end of the test, whatever happens, so that its
		// SIGTERM can stop it.
		t.Cleanup(func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) })
	}
}

func exited(p *operatorProcess) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func withoutProcess(ps []*operatorProcess, p *operatorProcess) []*operatorProcess {
	var out []*operatorProcess
	for _, x := range ps {
		if x != p {
			out = append(out, x)
		}
	}
	return out
}

// scrape gives up on a process that does not answer, such as one stopped.
var scrape = &http.Client{Timeout: 300 * time.Millisecond}

// leaderOf returns the process's opbus_leader and whether it answered.
func leaderOf(p *operatorProcess) (float64, bool) {
	resp, err := scrape.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "opbus_leader "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f, true
			}
		}
	}
	return 0, false
}

// readyOf returns the status of the process's /readyz, 0 if none.
func readyOf(p *operatorProcess) int {
	resp, err := scrape.Get("http://" + p.probes + "/readyz")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// waitLeading waits until one of ps reports opbus_leader 1.
func waitLeading(t *testing.T, ps []*operatorProcess, since time.Time) (*operatorProcess, time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(waitFor); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, p := range ps {
			if v, ok := leaderOf(p); ok && v == 1 {
				return p, time.Since(since)
			}
		}
	}
	t.Fatalf("no replica leads within %v", waitFor)
	return nil, 0
}

// leaseHolder returns the holder of webapp's Lease.
func (c *cluster) leaseHolder(t *testing.T) string {
	t.Helper()
	l, err := c.kube.CoordinationV1().Leases(c.ns).Get(context.Background(), "webapp.example.opbus.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitImage waits until the Deployment app runs image.
func (c *cluster) waitImage(t *testing.T, image string) {
	t.Helper()
	eventually(t, "Deployment at "+image, func() string {
		d, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), "app", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
			return "image " + got
		}
		return ""
	})
}

// waitQuiet waits until name's objects have not changed for a second.
func (c *cluster) waitQuiet(t *testing.T, name string) {
	t.Helper()
	last, since := c.resourceVersions(t, name), time.Now()
	eventually(t, "no more writes", func() string {
		if now := c.resourceVersions(t, name); now != last {
			last, since = now, time.Now()
		}
		if time.Since(since) < time.Second {
			return "written in the last second"
		}
		return ""
	})
}

// seenWrite is a change of an object that the test's watch saw.
type seenWrite struct {
	at   time.Time
	what string
}

type seenWrites struct {
	mu sync.Mutex
	ws []seenWrite
}

func (l *seenWrites) since(t time.Time) []seenWrite {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []seenWrite
	for _, w := range l.ws {
		if w.at.After(t) {
			out = append(out, w)
		}
	}
	return out
}

// watchWrites watches the namespace's WebApps, Deployments and Services.
func (c *cluster) watchWrites(t *testing.T) *seenWrites {
	t.Helper()
	l := &seenWrites{}
	for _, gvr := range []schema.GroupVersionResource{webapps, deployments, services} {
		w, err := c.dyn.Resource(gvr).Namespace(c.ns).Watch(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		go func() {
			for ev := range w.ResultChan() {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Bookmark && ev.Type != watch.Error {
					l.mu.Lock()
					l.ws = append(l.ws, seenWrite{time.Now(), fmt.Sprintf("%s %s %s (resourceVersion %s)", ev.Type, u.GetKind(), u.GetName(), u.GetResourceVersion())})
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

// monitor scrapes the processes' opbus_leader every 50 ms and notes every
// round in which more than one reports 1.
type monitor struct {
	mu      sync.Mutex
	ps      []*operatorProcess
	rounds  int
	doubles []string
	done    chan struct{}
	stopped chan struct{}
}

func (m *monitor) add(p *operatorProcess) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ps = append(m.ps, p)
}

func (m *monitor) run() {
	defer close(m.stopped)
	for {
		select {
		case <-m.done:
			return
		case <-time.After(50 * time.Millisecond):
		}
		m.mu.Lock()
		ps := append([]*operatorProcess(nil), m.ps...)
		m.mu.Unlock()
		leaders := 0
		for _, p := range ps {
			if v, ok := leaderOf(p); ok && v == 1 {
				leaders++
			}
		}
		m.mu.Lock()
		m.rounds++
		if leaders > 1 {
			m.doubles = append(m.doubles, fmt.Sprintf("%s: %d leaders", time.Now().Format("15:04:05.000"), leaders))
		}
		m.mu.Unlock()
	}
}

func (m *monitor) stop(t *testing.T) {
	close(m.done)
	<-m.stopped
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Logf("opbus_leader scraped in %d rounds", m.rounds)
	for _, d := range m.doubles {
		t.Errorf("two replicas reported opbus_leader 1 in one round at %s", d)
	}
}
