package k8s_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

var (
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// TestReadOnlyRelated runs an operator on Widgets (with conditions) that
// also watches the ConfigMaps and Deployments its Widgets control, only to
// relate them, as a user whose Role (testdata/rbac-related.yaml) grants
// nothing but get, list and watch on those. No handler runs on their
// kinds, so they are read-only: the Widget's handler runs when they
// appear and change, no request is refused, none but get, list and watch
// is made on them, and none carries anything the adapter writes.
func TestReadOnlyRelated(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	admin := dynClient(t, env.AdminConfig())

	applyRole(t, admin, "testdata/rbac-related.yaml", ns, kubetest.OperatorUser)
	var log requestLog
	userCfg := env.UserConfig(kubetest.OperatorUser)
	userCfg.WrapTransport = log.wrap
	probe := dynClient(t, env.UserConfig(kubetest.OperatorUser))
	eventually(t, "the authorizer knows the binding", func() bool {
		_, err := probe.Resource(deploymentsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		return err == nil
	})
	if _, err := probe.Resource(configMapsGVR).Namespace(ns).Patch(t.Context(), "none", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("patching a ConfigMap as %s: got %v, want Forbidden: the user must only read ConfigMaps", kubetest.OperatorUser, err)
	}

	var mu sync.Mutex
	var seen []string // what each run saw: kind/name=value, sorted
	start(t, k8s.Options{Config: userCfg, Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Owned: true},
		{GVR: deploymentsGVR, Namespaces: []string{ns}, Owned: true, ReadOnly: true},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("parts", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			rel, _ := ev.New[opbus.RelatedField].(map[string]any)
			var parts []string
			cms, _ := rel["ConfigMap"].(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(cms)) {
				data, _ := cms[name].(map[string]any)["data"].(map[string]any)
				parts = append(parts, "cm/"+name+"="+fmt.Sprint(data["state"]))
			}
			ds, _ := rel["Deployment.apps"].(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(ds)) {
				spec, _ := ds[name].(map[string]any)["spec"].(map[string]any)
				parts = append(parts, "deploy/"+name+"="+fmt.Sprint(spec["replicas"]))
			}
			mu.Lock()
			seen = append(seen, strings.Join(parts, ","))
			mu.Unlock()
			return opbus.Active(strings.Join(parts, ",")), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{
			"related.ConfigMap[*].data.state", `related["Deployment.apps"][*].spec.replicas`}}))
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
	w := createWidget(t, admin, ns, "w", `{"size":1}`)
	waitRuns("")
	owner := fmt.Sprintf(`[{"apiVersion":"test.opbus.dev/v1","kind":"Widget","name":"w","uid":%q,"controller":true}]`, w.GetUID())
	if _, err := admin.Resource(configMapsGVR).Namespace(ns).Create(t.Context(), obj(t,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","ownerReferences":%s},"data":{"state":"starting"}}`, owner), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRuns("", "cm/a=starting")
	if _, err := admin.Resource(deploymentsGVR).Namespace(ns).Create(t.Context(), obj(t,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","ownerReferences":%s},"spec":{"replicas":1,
		"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`, owner), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRuns("", "cm/a=starting", "cm/a=starting,deploy/d=1")
	patch(t, admin, configMapsGVR, ns, "a", `{"data":{"state":"ready"}}`)
	waitRuns("", "cm/a=starting", "cm/a=starting,deploy/d=1", "cm/a=ready,deploy/d=1")
	patch(t, admin, deploymentsGVR, ns, "d", `{"spec":{"replicas":2}}`)
	waitRuns("", "cm/a=starting", "cm/a=starting,deploy/d=1", "cm/a=ready,deploy/d=1", "cm/a=ready,deploy/d=2")
	if err := admin.Resource(configMapsGVR).Namespace(ns).Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRuns("", "cm/a=starting", "cm/a=starting,deploy/d=1", "cm/a=ready,deploy/d=1", "cm/a=ready,deploy/d=2", "deploy/d=2")
	eventually(t, "the Widget's condition shows its last run", func() bool {
		return conditionsOf(get(t, admin, widgetsGVR, ns, "w"))[k8s.ConditionType("parts")].Message == "deploy/d=2"
	})
	steady(t, "runs after the last", time.Second, func() int { return len(runs()) })

	used, refused := log.result()
	for _, req := range refused {
		t.Errorf("refused: %s", req)
	}
	for _, u := range slices.Sorted(maps.Keys(used)) {
		if (strings.Contains(u, " configmaps") || strings.Contains(u, " deployments")) &&
			!strings.HasSuffix(u, " get") && !strings.HasSuffix(u, " list") && !strings.HasSuffix(u, " watch") {
			t.Errorf("the operator wrote to a read-only resource: %s", u)
		}
	}
	d := get(t, admin, deploymentsGVR, ns, "d")
	if len(d.GetAnnotations()) > 0 || len(d.GetFinalizers()) > 0 {
		t.Errorf("the read-only Deployment carries annotations %v, finalizers %v: want none", d.GetAnnotations(), d.GetFinalizers())
	}
	t.Logf("requests by verb: %v", log.counts())
}

// TestReadOnlyWithHandlerFails: a resource marked ReadOnly on whose kind a
// handler runs (one without Kinds runs on every kind) makes Run fail,
// naming the handler and the resource.
func TestReadOnlyWithHandlerFails(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	err := runErr(t, env, []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Owned: true, ReadOnly: true},
	}, nil, func(b *opbus.Bus) {
		must(t, b.Handle("everything", func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Active(""), nil }, opbus.On{}))
	})
	if err == nil || !strings.Contains(err.Error(), `"everything"`) || !strings.Contains(err.Error(), "configmaps") || !strings.Contains(err.Error(), "ReadOnly") {
		t.Fatalf("Run: %v; want an error naming handler \"everything\", configmaps and ReadOnly", err)
	}
}
