package k8s_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestOwnedRelated: with ConfigMaps marked Owned, a Widget's handler reads
// the ConfigMaps the Widget controls under related.ConfigMap, once per
// distinct value of their data.state: a ConfigMap that appears, changes
// state or is deleted runs it; one the Widget owns without controlling it,
// and a change of a field the handler does not read, do not.
func TestOwnedRelated(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	opts := k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		// The Widget's statuses in the annotation; ConfigMaps are read-only.
		{GVR: widgetsGVR, Namespaces: []string{ns}, Status: k8s.StatusAnnotation},
		{GVR: configMaps, Namespaces: []string{ns}, Owned: true},
	}}
	var mu sync.Mutex
	var seen []string // what each run saw: name=state, sorted
	op := start(t, opts, func(b *opbus.Bus) {
		must(t, b.Handle("parts", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			rel, _ := ev.New[opbus.RelatedField].(map[string]any)
			cms, _ := rel["ConfigMap"].(map[string]any)
			var parts []string
			for _, name := range slices.Sorted(maps.Keys(cms)) {
				data, _ := cms[name].(map[string]any)["data"].(map[string]any)
				parts = append(parts, name+"="+data["state"].(string))
			}
			mu.Lock()
			seen = append(seen, strings.Join(parts, ","))
			mu.Unlock()
			return opbus.Active(strings.Join(parts, ",")), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"related.ConfigMap[*].data.state"}}))
	})
	runs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	waitRuns := func(want ...string) {
		t.Helper()
		eventually(t, "runs "+strings.Join(want, " | "), func() bool { return slices.Equal(runs(), want) })
	}
	w := createWidget(t, c, ns, "w", `{"size":1}`)
	waitRuns("")
	createCM := func(name, state string, controller bool) {
		t.Helper()
		cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"ownerReferences":[
			{"apiVersion":"test.opbus.dev/v1","kind":"Widget","name":"w","uid":%q,"controller":%v}]},"data":{"state":%q}}`,
			name, w.GetUID(), controller, state)
		if _, err := c.Resource(configMaps).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createCM("a", "starting", true)
	waitRuns("", "a=starting")
	createCM("b", "other", false) // owned, not controlled
	patch(t, c, configMaps, ns, "a", `{"metadata":{"labels":{"x":"y"}}}`)
	steady(t, "runs after an unread change and a ConfigMap the Widget does not control", 2*time.Second, func() int { return len(runs()) })
	patch(t, c, configMaps, ns, "a", `{"data":{"state":"ready"}}`)
	waitRuns("", "a=starting", "a=ready")
	if err := c.Resource(configMaps).Namespace(ns).Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRuns("", "a=starting", "a=ready", "")
	// The run is recorded before the handler returns; its status is
	// committed after.
	eventually(t, "the Widget's status is its last run's, active with no ConfigMap", func() bool {
		st, _, err := op.bus.Status(t.Context(), opbus.Key{Kind: widgetKind, Namespace: ns, Name: "w"})
		return err == nil && st == opbus.Active("")
	})
	steady(t, "runs after the last", time.Second, func() int { return len(runs()) })
}
