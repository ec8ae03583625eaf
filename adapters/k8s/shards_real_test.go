package k8s_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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
		n := fmt.Sprint(ev.Object()["spec"].(map[string]any)["n"])
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
