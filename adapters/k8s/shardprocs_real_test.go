package k8s_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// shardRun is one handler run that a replica process logged.
type shardRun struct {
	widget, version, replica string
	start, end               int64 // unix nanoseconds; end 0 if the run never ended
}

// readShardRuns parses the run log that replica processes append to.
func readShardRuns(t *testing.T, path string) []shardRun {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var runs []shardRun
	open := map[string]int{} // widget+replica → index of its open run
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		at, _ := strconv.ParseInt(f[4], 10, 64)
		k := f[1] + " " + f[3]
		switch f[0] {
		case "start":
			open[k] = len(runs)
			runs = append(runs, shardRun{widget: f[1], version: f[2], replica: f[3], start: at})
		case "end":
			if i, ok := open[k]; ok {
				runs[i].end = at
				delete(open, k)
			}
		}
	}
	return runs
}

// TestShardsReplicaProcesses runs replicas of a sharded operator as
// separate processes on the real API server, with the
// ShardedListAndWatch feature gate off (they filter on their side) and
// on: three split the widgets; one is killed with SIGKILL and the others
// take its part on once its Lease expired; one is added and takes a
// part; one is stopped cleanly (SIGTERM) and its part moves at once.
// After each step every widget's last version is handled, and no two
// runs on one widget, by any replicas, overlap in time (a run that never
// ended, the killed replica's, lasts until the kill).
func TestShardsReplicaProcesses(t *testing.T) {
	for _, gate := range []bool{false, true} {
		t.Run(fmt.Sprintf("gate=%v", gate), func(t *testing.T) { shardsReplicaProcesses(t, gate) })
	}
}

func shardsReplicaProcesses(t *testing.T, gate bool) {
	env := kubetest.Shared(t)
	if gate {
		env = kubetest.StartWith(t, &kubetest.StartOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
	}
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	kubeconfig := env.WriteKubeconfig(t, nil)
	runLog := filepath.Join(t.TempDir(), "runs")
	config := func(i int) replicaConfig {
		return replicaConfig{Kubeconfig: kubeconfig, Namespace: ns, Identity: fmt.Sprintf("r%d", i),
			Lease: fenceLease, Retry: fenceRetry, Shards: true, RunLog: runLog, Children: 1}
	}
	// OPBUS_SHARD_OBJECTS sets the number of widgets, for a larger run
	// than the default's (such as 2000).
	widgets := 60
	if v := os.Getenv("OPBUS_SHARD_OBJECTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("OPBUS_SHARD_OBJECTS=%q: want a positive number of widgets", v)
		}
		widgets = n
	}
	limit := 60*time.Second + time.Duration(widgets)*50*time.Millisecond
	rs := []*replica{startReplica(t, config(0)), startReplica(t, config(1)), startReplica(t, config(2))}
	for i := range widgets {
		createWidget(t, c, ns, fmt.Sprintf("w-%03d", i), `{"version":1}`)
	}
	handled := func(version string) func() bool {
		return func() bool {
			seen := map[string]bool{}
			for _, r := range readShardRuns(t, runLog) {
				if r.version == version && r.end != 0 {
					seen[r.widget] = true
				}
			}
			return len(seen) == widgets
		}
	}
	bump := func(version int) {
		for i := range widgets {
			patch(t, c, widgetsGVR, ns, fmt.Sprintf("w-%03d", i), fmt.Sprintf(`{"spec":{"version":%d}}`, version))
		}
	}
	waitLong := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, limit)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitLong("version 1 handled", handled("1"))
	byReplica := map[string]int{}
	for _, r := range readShardRuns(t, runLog) {
		byReplica[r.replica]++
	}
	for _, r := range rs {
		if byReplica[r.id] == 0 {
			t.Errorf("replica %s handled nothing of version 1: %v", r.id, byReplica)
		}
	}

	// Hand-off times, measured from outside by polling the replicas'
	// opbus_shard_buckets_owned every 50 ms while the widgets change:
	// each must be within the Lease duration plus the grace, plus
	// handOffMargin for the polling and for a loaded machine's delays.
	grace := k8s.ShardGrace(k8s.Shards{LeaseDuration: fenceLease, RenewPeriod: fenceRetry})
	bound := fenceLease + grace + handOffMargin
	waitLong("r0, r1 and r2 own all 256 buckets", func() bool { return owning(rs...) == 256 })
	handOff := func(what string, from time.Time, cond func() bool) <-chan time.Duration {
		took := make(chan time.Duration, 1)
		go func() {
			deadline := from.Add(limit)
			for !cond() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			took <- time.Since(from)
		}()
		return took
	}
	checkHandOff := func(what string, took <-chan time.Duration) {
		t.Helper()
		d := <-took
		t.Logf("hand-off time, %s: %v (bound: lease %v + grace %v + margin %v = %v)", what, d.Round(time.Millisecond), fenceLease, grace, handOffMargin, bound)
		if d > bound {
			t.Errorf("hand-off time, %s: %v, want at most %v", what, d.Round(time.Millisecond), bound)
		}
	}

	killedAt := time.Now()
	killed := killedAt.UnixNano()
	rs[0].signal(t, syscall.SIGKILL)
	tookKill := handOff("SIGKILL", killedAt, func() bool { return owning(rs[1], rs[2]) == 256 })
	bump(2)
	// After a SIGKILL, timed from r0's last renewal (its Lease's
	// renewTime, at most a renew period before the kill): r1 and r2 own
	// its buckets no sooner than the Lease duration plus the grace after
	// it (no overlap), and no later than crashMargin after that (not at
	// their next read of the ring or step of their balancers).
	renewed := lastRenewal(t, c, ns, "r0")
	kill := <-tookKill
	fromRenewal := killedAt.Sub(renewed) + kill
	t.Logf("hand-off time from r0's SIGKILL to r1 and r2 owning its buckets: %v; from its last renewal, %v before the kill: %v (want between lease %v + grace %v = %v and that + margin %v)",
		kill.Round(time.Millisecond), killedAt.Sub(renewed).Round(time.Millisecond), fromRenewal.Round(time.Millisecond),
		fenceLease, grace, fenceLease+grace, crashMargin)
	if fromRenewal < fenceLease+grace {
		t.Errorf("r0's buckets owned by others %v after its last renewal, before its Lease expired plus the grace (%v)", fromRenewal.Round(time.Millisecond), fenceLease+grace)
	}
	if fromRenewal > fenceLease+grace+crashMargin {
		t.Errorf("hand-off time after a SIGKILL, from r0's last renewal: %v, want at most lease + grace + margin = %v", fromRenewal.Round(time.Millisecond), fenceLease+grace+crashMargin)
	}
	waitLong("version 2 handled after r0 was killed", handled("2"))

	joinedAt := time.Now()
	rs = append(rs, startReplica(t, config(3)))
	tookJoin := handOff("join", joinedAt, func() bool { return rs[3].ready() == 200 && owning(rs[1], rs[2], rs[3]) == 256 })
	checkHandOff("from r3's start to it owning its buckets", tookJoin)
	bump(3)
	waitLong("version 3 handled after r3 joined", handled("3"))

	stoppedAt := time.Now()
	rs[1].signal(t, syscall.SIGTERM)
	tookStop := handOff("SIGTERM", stoppedAt, func() bool { return rs[1].exited() && owning(rs[2], rs[3]) == 256 })
	bump(4)
	checkHandOff("from r1's SIGTERM to r2 and r3 owning its buckets", tookStop)
	waitLong("r1 exited", rs[1].exited)
	if rs[1].code != replicaClean {
		t.Errorf("r1 exited with %d after SIGTERM, want %d", rs[1].code, replicaClean)
	}
	waitLong("version 4 handled after r1 stopped", handled("4"))
	for _, r := range rs[2:] {
		sum, n := r.metric(`opbus_shard_handoff_duration_seconds_sum{direction="acquired"`), r.metric(`opbus_shard_handoff_duration_seconds_count{direction="acquired"`)
		if n > 0 {
			t.Logf("%s: %v hand-offs acquired, %.3f s each on average from claim to Acquire's end", r.id, n, sum/n)
		}
	}

	// The two replicas left own the whole hash space between them, and,
	// with the gate off, each received objects of the other's (the server
	// did not select).
	waitLong("r2 and r3 own all 256 buckets", func() bool {
		return rs[2].metric("opbus_shard_buckets_owned")+rs[3].metric("opbus_shard_buckets_owned") == 256
	})
	for _, r := range rs[2:] {
		n := r.metric("opbus_shard_objects_not_owned_total")
		t.Logf("%s: %v object states received that another replica owns (gate %v)", r.id, n, gate)
		if n == 0 && !gate {
			t.Errorf("%s counted no objects not owned, though the server does not select", r.id)
		}
		if n := r.metric(`opbus_shard_handoffs_total{direction="acquired"`); n == 0 {
			t.Errorf("%s counted no hand-off", r.id)
		}
		if n := r.metric("opbus_shard_keys_owned"); n == 0 || n == float64(widgets) {
			t.Errorf("%s owns %v of %d widgets, want a part", r.id, n, widgets)
		}
	}

	runs := readShardRuns(t, runLog)
	by := map[string][]shardRun{}
	v3 := map[string]int{}
	for _, r := range runs {
		if r.end == 0 {
			if r.replica != "r0" {
				t.Errorf("a run of %s by %s never ended", r.widget, r.replica)
			}
			r.end = killed
		}
		by[r.widget] = append(by[r.widget], r)
		if r.version == "3" {
			v3[r.replica]++
		}
	}
	if v3["r3"] == 0 {
		t.Errorf("the replica that joined handled none of version 3: %v", v3)
	}
	for w, rr := range by {
		for i := range rr {
			for j := i + 1; j < len(rr); j++ {
				a, b := rr[i], rr[j]
				if a.start < b.end && b.start < a.end {
					t.Errorf("%s: runs overlap: %s on version %s and %s on version %s", w, a.replica, a.version, b.replica, b.version)
				}
			}
		}
	}
}

// handOffMargin is what the hand-off times of a replica joining and of
// one stopping cleanly may exceed the Lease duration plus the grace by in
// TestShardsReplicaProcesses: the 50 ms polling of the replicas' metrics,
// the steps of their balancers (a renew period each) and the delays of a
// loaded 2-core machine.
const handOffMargin = 2 * time.Second

// crashMargin is what the hand-off time after a SIGKILL, from the killed
// replica's last renewal, may exceed the Lease duration plus the grace by
// in TestShardsReplicaProcesses: the claim's round trips (its Lease
// written, the ring read again), Bus.Acquire reading the bucket's
// records, and the test's polling of the replicas' metrics every 50 ms,
// on a loaded machine.
const crashMargin = 400 * time.Millisecond

// lastRenewal returns the renewTime of the Lease that replica id holds in
// the shard ring of namespace ns.
func lastRenewal(t *testing.T, c dynamic.Interface, ns, id string) time.Time {
	t.Helper()
	list, err := c.Resource(leasesGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{LabelSelector: k8s.LabelShardRing})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list.Items {
		if h, _, _ := unstructured.NestedString(l.Object, "spec", "holderIdentity"); h == id {
			s, _, _ := unstructured.NestedString(l.Object, "spec", "renewTime")
			at, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				t.Fatalf("Lease %s: renewTime %q: %v", l.GetName(), s, err)
			}
			return at
		}
	}
	t.Fatalf("no Lease of the shard ring in %s is held by %s", ns, id)
	return time.Time{}
}

// owning returns how many buckets the replicas rs own together, by their
// opbus_shard_buckets_owned.
func owning(rs ...*replica) float64 {
	var n float64
	for _, r := range rs {
		n += r.metric("opbus_shard_buckets_owned")
	}
	return n
}

// metric returns the sum of the replica's samples whose line starts with
// prefix (a name, or a name and the start of its labels); 0 if it did not
// answer.
func (r *replica) metric(prefix string) float64 {
	resp, err := scrapeClient.Get("http://" + r.metrics + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	var sum float64
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			var f float64
			if _, err := fmt.Sscan(line[i+1:], &f); err == nil {
				sum += f
			}
		}
	}
	return sum
}
