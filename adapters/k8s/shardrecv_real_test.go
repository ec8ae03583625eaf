package k8s_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// readReceived returns the names of the ConfigMaps a replica's transport
// logged (see countReceived) at since or later.
func readReceived(t *testing.T, path string, since time.Time) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, at, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if ns, err := strconv.ParseInt(at, 10, 64); err == nil && ns >= since.UnixNano() {
			got[name] = true
		}
	}
	return got
}

// receivedTolerance is how far from 1/3 of the ConfigMaps each of three
// replicas may receive with the gate on: its share is that of its buckets
// (about 85 of 256, ± about 8) of uids hashed at random (± about 3% of
// 300), so ± 12 points is about three standard deviations.
const receivedTolerance = 0.12

// TestShardsReplicaProcessesReceive runs three replicas of a sharded
// operator as separate processes on ConfigMaps, which kube-apiserver
// v1.37.2 selects by shard with the ShardedListAndWatch gate on, and
// counts at each replica's transport the ConfigMaps it receives (list
// items and watch events) while every one of them changes, once the ring
// has settled. With the gate on each receives about 1/3 of them (within
// receivedTolerance), none received by two, all by one; with it off each
// receives all of them. Every value is handled either way, with no two
// runs on one ConfigMap overlapping; one replica is then stopped cleanly
// and the other two take its part on.
func TestShardsReplicaProcessesReceive(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("gate=%v", gate), func(t *testing.T) {
			env := kubetest.Shared(t)
			if gate {
				env = kubetest.StartWith(t, &kubetest.StartOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
			}
			ns := env.Namespace(t)
			c := dynClient(t, env.AdminConfig())
			kubeconfig := env.WriteKubeconfig(t, nil)
			dir := t.TempDir()
			runLog := filepath.Join(dir, "runs")
			recv := func(i int) string { return filepath.Join(dir, fmt.Sprintf("recv-r%d", i)) }
			config := func(i int) replicaConfig {
				return replicaConfig{Kubeconfig: kubeconfig, Namespace: ns, Identity: fmt.Sprintf("r%d", i),
					Lease: fenceLease, Retry: fenceRetry, Shards: true, RunLog: runLog, ConfigMaps: true, RecvLog: recv(i)}
			}
			const objects = 300
			rs := []*replica{startReplica(t, config(0)), startReplica(t, config(1)), startReplica(t, config(2))}
			for i := range objects {
				cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w-%03d","labels":{"shard-test":"yes"}},"data":{"version":"1"}}`, i)
				if _, err := c.Resource(configMapsGVR).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			handled := func(version string) func() bool {
				return func() bool {
					seen := map[string]bool{}
					for _, r := range readShardRuns(t, runLog) {
						if r.version == version && r.end != 0 {
							seen[r.widget] = true
						}
					}
					return len(seen) == objects
				}
			}
			bump := func(version int) {
				for i := range objects {
					patch(t, c, configMapsGVR, ns, fmt.Sprintf("w-%03d", i), fmt.Sprintf(`{"data":{"version":"%d"}}`, version))
				}
			}
			waitLong := func(what string, cond func() bool) {
				t.Helper()
				deadline := time.Now().Add(90 * time.Second)
				for !cond() {
					if time.Now().After(deadline) {
						t.Fatalf("%s: not within 90s", what)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			waitLong("version 1 handled", handled("1"))
			waitLong("the three own all 256 buckets, ready", func() bool {
				return owning(rs...) == 256 && rs[0].ready() == 200 && rs[1].ready() == 200 && rs[2].ready() == 200
			})
			time.Sleep(2 * time.Second) // the relists with the final selectors, and the records' writes
			since := time.Now()
			bump(2)
			waitLong("version 2 handled", handled("2"))
			time.Sleep(time.Second) // the last events of the records' writes

			union := map[string]int{}
			for i := range rs {
				got := readReceived(t, recv(i), since)
				for name := range got {
					union[name]++
				}
				share := float64(len(got)) / objects
				t.Logf("gate=%v: r%d received %d of %d ConfigMaps (%.1f%%) at its transport while each changed", gate, i, len(got), objects, 100*share)
				if gate && (share < 1.0/3-receivedTolerance || share > 1.0/3+receivedTolerance) {
					t.Errorf("r%d received %d of %d ConfigMaps with the gate on: want about 1/3 (± %.0f points)", i, len(got), objects, 100*receivedTolerance)
				}
				if !gate && len(got) != objects {
					t.Errorf("r%d received %d of %d ConfigMaps with the gate off: want all of them", i, len(got), objects)
				}
			}
			if len(union) != objects {
				t.Errorf("the replicas received %d distinct ConfigMaps of the %d changed", len(union), objects)
			}
			if gate {
				for name, n := range union {
					if n > 1 {
						t.Errorf("%s was received by %d replicas with the gate on", name, n)
					}
				}
			}

			rs[1].signal(t, syscall.SIGTERM)
			waitLong("r1 exited", rs[1].exited)
			bump(3)
			waitLong("version 3 handled after r1 stopped", handled("3"))
			runs := readShardRuns(t, runLog)
			by := map[string][]shardRun{}
			for _, r := range runs {
				if r.end == 0 {
					t.Errorf("a run of %s by %s never ended", r.widget, r.replica)
					continue
				}
				by[r.widget] = append(by[r.widget], r)
			}
			for w, rr := range by {
				for i := range rr {
					for j := i + 1; j < len(rr); j++ {
						if a, b := rr[i], rr[j]; a.start < b.end && b.start < a.end {
							t.Errorf("%s: runs overlap: %s on version %s and %s on version %s", w, a.replica, a.version, b.replica, b.version)
						}
					}
				}
			}
		})
	}
}
