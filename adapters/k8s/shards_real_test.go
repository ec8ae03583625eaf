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

// shardLog records the handler runs of sharded replicas: which replica
// handled which value of each object, and whether two runs on one object
// overlapped.
type shardLog struct {
	mu       sync.Mutex
	running  map[string]string         // object → replica running a handler on it
	handled  map[string]map[string]int // object → spec.n → runs
	by       map[string]map[string]int // replica → object → runs
	overlaps []string
}

func newShardLog() *shardLog {
	return &shardLog{running: map[string]string{}, handled: map[string]map[string]int{}, by: map[string]map[string]int{}}
}

func (l *shardLog) handler(replica string) opbus.HandlerFunc {
	return func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		name := ev.Key.Name
		spec, ok := ev.Object()["spec"].(map[string]any)
		if !ok {
			spec, _ = ev.Object()["data"].(map[string]any) // a ConfigMap's
		}
		n := fmt.Sprint(spec["n"])
		l.mu.Lock()
		if other, ok := l.running[name]; ok {
			l.overlaps = append(l.overlaps, fmt.Sprintf("%s on %s and %s", name, other, replica))
		}
		l.running[name] = replica
		l.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		l.mu.Lock()
		delete(l.running, name)
		if l.handled[name] == nil {
			l.handled[name] = map[string]int{}
		}
		l.handled[name][n]++
		if l.by[replica] == nil {
			l.by[replica] = map[string]int{}
		}
		l.by[replica][name]++
		l.mu.Unlock()
		return opbus.Active(""), nil
	}
}

// lastHandled reports whether every object's value n was handled.
func (l *shardLog) lastHandled(objects int, n string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range objects {
		if l.handled[fmt.Sprintf("w-%03d", i)][n] == 0 {
			return false
		}
	}
	return true
}

// TestShardsSplitAndHandOver runs two replicas of one operator in a shard
// ring on the real API server (gate off: each filters on its side): the
// objects are split between them, none handled by both at once; a third
// replica joins and takes a part; one stops cleanly and the others take
// its part on. Every object's last value is handled throughout.
func TestShardsSplitAndHandOver(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	const objects = 40
	log := newShardLog()
	run := func(id string) *operator {
		return start(t, k8s.Options{
			Config: env.AdminConfig(), Name: "shardtest",
			Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
			Shards:    &k8s.Shards{Namespace: ns, Identity: id, LeaseDuration: 3 * time.Second, RenewPeriod: 200 * time.Millisecond},
		}, func(b *opbus.Bus) {
			must(t, b.Handle("record", log.handler(id), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}}))
		})
	}
	a, b := run("a"), run("b")
	for i := range objects {
		createWidget(t, c, ns, fmt.Sprintf("w-%03d", i), `{"n":1}`)
	}
	eventually(t, "every widget's n=1 handled", func() bool { return log.lastHandled(objects, "1") })
	eventually(t, "both replicas ready", func() bool { return a.src.Ready() == nil && b.src.Ready() == nil })
	log.mu.Lock()
	na, nb := len(log.by["a"]), len(log.by["b"])
	log.mu.Unlock()
	if na == 0 || nb == 0 || na+nb < objects {
		t.Errorf("two replicas handled %d and %d of %d objects: want a split", na, nb, objects)
	}

	cr := run("c")
	eventually(t, "c ready", func() bool { return cr.src.Ready() == nil })
	for i := range objects {
		patch(t, c, widgetsGVR, ns, fmt.Sprintf("w-%03d", i), `{"spec":{"n":2}}`)
	}
	eventually(t, "every widget's n=2 handled", func() bool { return log.lastHandled(objects, "2") })
	log.mu.Lock()
	nc := len(log.by["c"])
	log.mu.Unlock()
	if nc == 0 {
		t.Error("the replica that joined handled nothing")
	}

	b.stop(t)
	for i := range objects {
		patch(t, c, widgetsGVR, ns, fmt.Sprintf("w-%03d", i), `{"spec":{"n":3}}`)
	}
	eventually(t, "every widget's n=3 handled after b stopped", func() bool { return log.lastHandled(objects, "3") })

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.overlaps) > 0 {
		t.Errorf("handler runs overlapped on one object: %v", log.overlaps)
	}
	for name, ns := range log.handled {
		for n, runs := range ns {
			if runs > 1 {
				t.Errorf("%s: value n=%s handled %d times", name, n, runs)
			}
		}
	}
}

// TestShardsServerSelects runs two replicas in a shard ring on an API
// server with the ShardedListAndWatch gate on, and, for contrast, on the
// shared one without it: once they own their buckets, a change of every
// widget reaches each replica only for its own widgets with the gate on
// (no state received that the other owns), and all of them without it;
// either way each value is handled once.
func TestShardsServerSelects(t *testing.T) {
	t.Parallel()
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("gate=%v", gate), func(t *testing.T) {
			env := kubetest.Shared(t)
			if gate {
				env = kubetest.StartWith(t, &kubetest.StartOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
			}
			ns := env.Namespace(t)
			c := dynClient(t, env.AdminConfig())
			const objects = 40
			log := newShardLog()
			run := func(id string) *operator {
				return start(t, k8s.Options{
					Config: env.AdminConfig(), Name: "shardtest",
					Resources: []k8s.Resource{{GVR: configMapsGVR, Namespaces: []string{ns}, LabelSelector: "shard-test"}},
					Shards:    &k8s.Shards{Namespace: ns, Identity: id, LeaseDuration: 3 * time.Second, RenewPeriod: 200 * time.Millisecond},
				}, func(b *opbus.Bus) {
					must(t, b.Handle("record", log.handler(id), opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data"}}))
				})
			}
			a, b := run("a"), run("b")
			for i := range objects {
				cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w-%03d","labels":{"shard-test":"yes"}},"data":{"n":"1"}}`, i)
				if _, err := c.Resource(configMapsGVR).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "every ConfigMap's n=1 handled", func() bool { return log.lastHandled(objects, "1") })
			eventually(t, "both own all buckets", func() bool {
				_, na := k8s.ShardNotOwned(a.src)
				_, nb := k8s.ShardNotOwned(b.src)
				return na+nb == 256 && a.src.Ready() == nil && b.src.Ready() == nil
			})
			time.Sleep(time.Second) // the relists with the final selectors
			a0, _ := k8s.ShardNotOwned(a.src)
			b0, _ := k8s.ShardNotOwned(b.src)
			for i := range objects {
				patch(t, c, configMapsGVR, ns, fmt.Sprintf("w-%03d", i), `{"data":{"n":"2"}}`)
			}
			eventually(t, "every ConfigMap's n=2 handled", func() bool { return log.lastHandled(objects, "2") })
			a1, _ := k8s.ShardNotOwned(a.src)
			b1, _ := k8s.ShardNotOwned(b.src)
			if gate && (a1 != a0 || b1 != b0) {
				t.Errorf("with the gate on, the replicas received %d and %d states of the other's ConfigMaps", a1-a0, b1-b0)
			}
			if !gate && a1-a0+b1-b0 < objects/2 {
				t.Errorf("without the gate, the replicas received only %d and %d states of the other's ConfigMaps: the contrast shows nothing", a1-a0, b1-b0)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			if len(log.by["a"]) == 0 || len(log.by["b"]) == 0 {
				t.Errorf("one replica handled nothing: a %d, b %d", len(log.by["a"]), len(log.by["b"]))
			}
			if len(log.overlaps) > 0 {
				t.Errorf("handler runs overlapped: %v", log.overlaps)
			}
			for name, vs := range log.handled {
				for n, runs := range vs {
					if runs > 1 {
						t.Errorf("%s: n=%s handled %d times", name, n, runs)
					}
				}
			}
		})
	}
}
