package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// TestShardsRefuseHandledReferenced checks that a sharded Source refuses a
// Referenced resource on which handlers run, naming it.
func TestShardsRefuseHandledReferenced(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	env.InstallCRDs(t, obj(t, "%s", backupCRD))
	ns := env.Namespace(t)
	src, err := k8s.New(&k8s.Options{
		Config: env.AdminConfig(), Name: "shardref", Logger: testLogger(t),
		Resources: []k8s.Resource{
			{GVR: backupsGVR, Namespaces: []string{ns}},
			{GVR: configMapsGVR, Namespaces: []string{ns}, Referenced: []k8s.Reference{{Kind: backupKind, Field: "spec.target"}}},
		},
		Shards: &k8s.Shards{Namespace: ns, Identity: "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Active(""), nil }
	must(t, bus.Handle("backup", noop, opbus.On{Kinds: []string{backupKind}, Fields: []string{"spec"}}))
	must(t, bus.Handle("cm", noop, opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data"}}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = src.Run(ctx, bus)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "configmaps is Referenced by "+backupKind) {
		t.Fatalf("Run with a handled Referenced resource under Shards: %v, want a refusal naming configmaps and %s", err, backupKind)
	}
}
