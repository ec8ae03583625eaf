package k8s_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestRestartRelatedDeletedWhileDown (rule 34 with K29): a ConfigMap
// owned by a Widget and deleted while no bus ran is never observed again;
// the restarted Source ends the relist once its informers have synced
// (Bus.Synced), and the Widget's handler runs once, on the view without
// it, while the Widget whose ConfigMap stayed runs nothing.
func TestRestartRelatedDeletedWhileDown(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	resources := []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}, {GVR: configMaps, Namespaces: []string{ns}, Owned: true}}
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
	runsOf := func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(runs[name])
	}

	op := startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: resources}, opbus.Options{}, register)
	for _, name := range []string{"kept", "gone"} {
		w := createWidget(t, c, ns, name, `{"size":1}`)
		cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"ownerReferences":[
			{"apiVersion":"test.opbus.dev/v1","kind":"Widget","name":%q,"uid":%q,"controller":true}]},"data":{"state":"up"}}`,
			name+"-part", name, w.GetUID())
		if _, err := c.Resource(configMaps).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both Widgets' handlers saw their ConfigMap", func() bool {
		k, g := runsOf("kept"), runsOf("gone")
		return len(k) > 0 && k[len(k)-1] == "up" && len(g) > 0 && g[len(g)-1] == "up"
	})
	steady(t, "runs before the restart", time.Second, func() int { return len(runsOf("kept")) + len(runsOf("gone")) })
	op.stop(t)
	if err := c.Resource(configMaps).Namespace(ns).Delete(t.Context(), "gone-part", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kept, gone := len(runsOf("kept")), len(runsOf("gone"))

	op = startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: resources}, opbus.Options{}, register)
	eventually(t, "the Widget whose ConfigMap went ran", func() bool { return len(runsOf("gone")) > gone })
	steady(t, "runs after the restart", time.Second, func() int { return len(runsOf("kept")) + len(runsOf("gone")) })
	if got := runsOf("gone")[gone:]; !slices.Equal(got, []string{"none"}) {
		t.Errorf("gone after the restart: runs %q, want one on the view without its ConfigMap", got)
	}
	if got := runsOf("kept")[kept:]; len(got) != 0 {
		t.Errorf("kept after the restart: runs %q, want none", got)
	}
	op.stop(t)
}
