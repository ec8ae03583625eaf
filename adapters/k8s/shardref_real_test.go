package k8s_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestShardsReferencedFollowReferrer runs two replicas in a shard ring on
// the real API server with Backups that each name a ConfigMap in
// spec.target (ConfigMaps Referenced by Backups, read-only): when every
// ConfigMap's data changes, and when every ConfigMap is deleted, each
// Backup's handler sees it on the replica that handles the Backup,
// wherever the ConfigMap's own uid would place it.
func TestShardsReferencedFollowReferrer(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	env.InstallCRDs(t, obj(t, "%s", backupCRD))
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	const objects = 24
	var mu sync.Mutex
	seen := map[string]string{} // Backup → the data.v of its ConfigMap in its last run
	by := map[string]map[string]bool{}
	run := func(id string) *operator {
		return start(t, k8s.Options{
			Config: env.AdminConfig(), Name: "shardref",
			Resources: []k8s.Resource{
				{GVR: backupsGVR, Namespaces: []string{ns}},
				{GVR: configMapsGVR, Namespaces: []string{ns}, LabelSelector: "shard-test", Referenced: []k8s.Reference{{Kind: backupKind, Field: "spec.target"}}},
			},
			Shards: &k8s.Shards{Namespace: ns, Identity: id, LeaseDuration: 3 * time.Second, RenewPeriod: 200 * time.Millisecond},
		}, func(b *opbus.Bus) {
			must(t, b.Handle("backup", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
				rel, _ := ev.New[opbus.RelatedField].(map[string]any)
				cms, _ := rel["ConfigMap"].(map[string]any)
				var v string
				for _, cm := range cms {
					data, _ := cm.(map[string]any)["data"].(map[string]any)
					v, _ = data["v"].(string)
				}
				mu.Lock()
				seen[ev.Key.Name] = v
				if by[id] == nil {
					by[id] = map[string]bool{}
				}
				by[id][ev.Key.Name] = true
				mu.Unlock()
				return opbus.Active(v), nil
			}, opbus.On{Kinds: []string{backupKind}, Fields: []string{"spec", "related.ConfigMap[*].data"}}))
		})
	}
	a, b := run("a"), run("b")
	eventually(t, "both own their buckets", func() bool {
		_, na := k8s.ShardNotOwned(a.src)
		_, nb := k8s.ShardNotOwned(b.src)
		return na+nb == 256 && na < 256 && a.src.Ready() == nil && b.src.Ready() == nil
	})
	for i := range objects {
		cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%03d","labels":{"shard-test":"yes"}},"data":{"v":"1"}}`, i)
		if _, err := c.Resource(configMapsGVR).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bk := obj(t, `{"apiVersion":"test.opbus.dev/v1","kind":"Backup","metadata":{"name":"b-%03d"},"spec":{"target":"cm-%03d"}}`, i, i)
		if _, err := c.Resource(backupsGVR).Namespace(ns).Create(t.Context(), bk, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	all := func(v string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for i := range objects {
				if seen[fmt.Sprintf("b-%03d", i)] != v {
					return false
				}
			}
			return true
		}
	}
	report := func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("last data.v seen per Backup: %v", seen)
		}
	}
	defer report()
	eventually(t, "every Backup saw its ConfigMap's v=1", all("1"))
	for i := range objects {
		patch(t, c, configMapsGVR, ns, fmt.Sprintf("cm-%03d", i), `{"data":{"v":"2"}}`)
	}
	eventually(t, "every Backup saw its ConfigMap's v=2", all("2"))
	for i := range objects {
		if err := c.Resource(configMapsGVR).Namespace(ns).Delete(t.Context(), fmt.Sprintf("cm-%03d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every Backup saw its ConfigMap gone", all(""))
	mu.Lock()
	defer mu.Unlock()
	if len(by["a"]) == 0 || len(by["b"]) == 0 {
		t.Errorf("one replica handled no Backup: a %d, b %d", len(by["a"]), len(by["b"]))
	}
}

// TestShardsHandledReferenced runs two replicas in a shard ring on the
// real API server, with the ShardedListAndWatch gate on and off, with
// Backups that name ConfigMaps in spec.target (ConfigMaps Referenced by
// Backups), four Backups to a ConfigMap, and a handler on the ConfigMaps
// too: each ConfigMap's handler runs on one replica only, once per value
// (the replica its own uid places it with), while the Backups that name
// it, on both replicas, see it change and go.
func TestShardsHandledReferenced(t *testing.T) {
	t.Parallel()
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("gate=%v", gate), func(t *testing.T) {
			env := kubetest.Shared(t)
			if gate {
				env = kubetest.StartWith(t, &kubetest.StartOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
			}
			env.InstallCRDs(t, obj(t, "%s", backupCRD))
			ns := env.Namespace(t)
			c := dynClient(t, env.AdminConfig())
			const configMaps, backups = 8, 32
			var mu sync.Mutex
			seen := map[string]string{}         // Backup → the data.v of its ConfigMap in its last run
			backupBy := map[string]string{}     // Backup → the replica that ran it last
			cmBy := map[string]map[string]int{} // ConfigMap → replica → runs
			cmRuns := map[string]int{}          // "ConfigMap v" → runs
			run := func(id string) *operator {
				return start(t, k8s.Options{
					Config: env.AdminConfig(), Name: "shardref",
					Resources: []k8s.Resource{
						{GVR: backupsGVR, Namespaces: []string{ns}},
						{GVR: configMapsGVR, Namespaces: []string{ns}, LabelSelector: "shard-test", Referenced: []k8s.Reference{{Kind: backupKind, Field: "spec.target"}}},
					},
					Shards: &k8s.Shards{Namespace: ns, Identity: id, LeaseDuration: 3 * time.Second, RenewPeriod: 200 * time.Millisecond},
				}, func(b *opbus.Bus) {
					must(t, b.Handle("backup", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
						rel, _ := ev.New[opbus.RelatedField].(map[string]any)
						cms, _ := rel["ConfigMap"].(map[string]any)
						var v string
						for _, cm := range cms {
							data, _ := cm.(map[string]any)["data"].(map[string]any)
							v, _ = data["v"].(string)
						}
						mu.Lock()
						seen[ev.Key.Name], backupBy[ev.Key.Name] = v, id
						mu.Unlock()
						return opbus.Active(v), nil
					}, opbus.On{Kinds: []string{backupKind}, Fields: []string{"spec", "related.ConfigMap[*].data"}}))
					must(t, b.Handle("cm", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
						data, _ := ev.New["data"].(map[string]any)
						v, _ := data["v"].(string)
						mu.Lock()
						if cmBy[ev.Key.Name] == nil {
							cmBy[ev.Key.Name] = map[string]int{}
						}
						cmBy[ev.Key.Name][id]++
						cmRuns[ev.Key.Name+" "+v]++
						mu.Unlock()
						return opbus.Active(v), nil
					}, opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data"}}))
				})
			}
			a, b := run("a"), run("b")
			eventually(t, "both own their buckets", func() bool {
				_, na := k8s.ShardNotOwned(a.src)
				_, nb := k8s.ShardNotOwned(b.src)
				return na+nb == 256 && na < 256 && a.src.Ready() == nil && b.src.Ready() == nil
			})
			for i := range configMaps {
				cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%03d","labels":{"shard-test":"yes"}},"data":{"v":"1"}}`, i)
				if _, err := c.Resource(configMapsGVR).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range backups {
				bk := obj(t, `{"apiVersion":"test.opbus.dev/v1","kind":"Backup","metadata":{"name":"b-%03d"},"spec":{"target":"cm-%03d"}}`, i, i%configMaps)
				if _, err := c.Resource(backupsGVR).Namespace(ns).Create(t.Context(), bk, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			all := func(v string) func() bool {
				return func() bool {
					mu.Lock()
					defer mu.Unlock()
					for i := range backups {
						if seen[fmt.Sprintf("b-%03d", i)] != v {
							return false
						}
					}
					for i := range configMaps {
						if v != "" && cmRuns[fmt.Sprintf("cm-%03d %s", i, v)] == 0 {
							return false
						}
					}
					return true
				}
			}
			defer func() {
				if t.Failed() {
					mu.Lock()
					defer mu.Unlock()
					t.Logf("last data.v seen per Backup: %v; ConfigMap runs per replica: %v", seen, cmBy)
				}
			}()
			eventually(t, "every Backup saw its ConfigMap's v=1, every ConfigMap's v=1 handled", all("1"))
			for i := range configMaps {
				patch(t, c, configMapsGVR, ns, fmt.Sprintf("cm-%03d", i), `{"data":{"v":"2"}}`)
			}
			eventually(t, "every Backup saw its ConfigMap's v=2, every ConfigMap's v=2 handled", all("2"))
			for i := range configMaps {
				if err := c.Resource(configMapsGVR).Namespace(ns).Delete(t.Context(), fmt.Sprintf("cm-%03d", i), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "every Backup saw its ConfigMap gone", all(""))

			mu.Lock()
			defer mu.Unlock()
			for name, by := range cmBy {
				if len(by) != 1 {
					t.Errorf("%s: handled by %d replicas (%v), want one", name, len(by), by)
				}
			}
			for k, n := range cmRuns {
				if n != 1 {
					t.Errorf("ConfigMap %s handled %d times, want once", k, n)
				}
			}
			// A ConfigMap named by Backups on both replicas: its changes
			// reached the replica that does not handle it.
			split := 0
			for i := range configMaps {
				on := map[string]bool{}
				for j := i; j < backups; j += configMaps {
					on[backupBy[fmt.Sprintf("b-%03d", j)]] = true
				}
				if len(on) == 2 {
					split++
				}
			}
			if split == 0 {
				t.Errorf("no ConfigMap is named by Backups on both replicas (Backups by replica: %v): the test shows nothing", backupBy)
			}
		})
	}
}
