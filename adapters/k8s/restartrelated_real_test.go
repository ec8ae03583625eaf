package k8s_test

import (
	"context"
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

// TestRestartSeesRelated (rule K29): after a restart, an owner's first
// run sees the objects it controls, so a handler that read them before
// does not run again — whether the owner's or its children's informer
// lists first. Without it, the first state of each Widget is dispatched
// with an empty view, the handler runs with no ConfigMap, and again once
// they are observed.
func TestRestartSeesRelated(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	// Widgets listed first, then ConfigMaps, and the other way round.
	orders := [][]k8s.Resource{
		{{GVR: widgetsGVR, Namespaces: []string{ns}}, {GVR: configMaps, Namespaces: []string{ns}, Owned: true}},
		{{GVR: configMaps, Namespaces: []string{ns}, Owned: true}, {GVR: widgetsGVR, Namespaces: []string{ns}}},
	}
	var mu sync.Mutex
	runs := map[string][]string{} // Widget → what each run saw
	register := func(b *opbus.Bus) {
		must(t, b.Handle("parts", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			state, err := opbus.Get[string](ev.New, fmt.Sprintf("related.ConfigMap[%q].data.state", ev.Key.Name+"-part"))
			if err != nil {
				state = "none"
			}
			mu.Lock()
			runs[ev.Key.Name] = append(runs[ev.Key.Name], state)
			mu.Unlock()
			return opbus.Active(state), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"related.ConfigMap[*].data.state"}}))
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range runs {
			n += len(r)
		}
		return n
	}

	op := startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: orders[0]}, opbus.Options{}, register)
	const widgets = 5
	for i := range widgets {
		name := fmt.Sprintf("w%d", i)
		w := createWidget(t, c, ns, name, `{"size":1}`)
		cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"ownerReferences":[
			{"apiVersion":"test.opbus.dev/v1","kind":"Widget","name":%q,"uid":%q,"controller":true}]},"data":{"state":"up"}}`,
			name+"-part", name, w.GetUID())
		if _, err := c.Resource(configMaps).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every Widget's handler saw its ConfigMap", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range widgets {
			r := runs[fmt.Sprintf("w%d", i)]
			if len(r) == 0 || r[len(r)-1] != "up" {
				return false
			}
		}
		return true
	})
	steady(t, "runs before the restart", time.Second, count)
	op.stop(t)

	for _, order := range orders {
		before := count()
		op := startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: order}, opbus.Options{}, register)
		eventually(t, "the restarted Source is ready", func() bool { return op.src.Ready() == nil })
		steady(t, "runs after the restart", 2*time.Second, count)
		if n := count() - before; n != 0 {
			mu.Lock()
			t.Errorf("resources %s first: %d runs after the restart, want none: %v", order[0].GVR.Resource, n, runs)
			mu.Unlock()
		}
		op.stop(t)
	}
}
