package k8s_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestMixedStatusModes runs one Source and one bus on Widgets (the
// adapter writes their statuses as conditions) and Pods (as an
// annotation). A handler on status.conditions of every kind runs when a
// Pod's own Ready condition changes, but not when the adapter writes the
// Widget's conditions (its Ready and one per slot, as spec.size changes):
// the bus ignores the adapter's conditions on Widgets only.
func TestMixedStatusModes(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var r runs
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: podsGVR, Namespaces: []string{ns}},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("conds", r.handler(nil), opbus.On{Fields: []string{"status.conditions"}}))
		must(t, b.Handle("size", r.handler(sizeStatus), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
	})

	createWidget(t, c, ns, "w", `{"size":1}`)
	waitConditions(t, c, ns, "w", metav1.ConditionTrue, "size 1")
	createPod(t, c, ns, "p")
	eventually(t, "conds runs on the Pod's creation", func() bool { return r.count("conds", "p") == 1 })
	for _, status := range []string{"False", "True"} {
		patch(t, c, podsGVR, ns, "p", fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q}]}}`, status), "status")
	}
	eventually(t, "conds runs on each change of the Pod's Ready condition", func() bool { return r.count("conds", "p") == 3 })
	last := r.of("conds", "p")[2]
	if got, _, _ := unstructured.NestedSlice(last.New, "status", "conditions"); len(got) != 1 || got[0].(map[string]any)["status"] != "True" {
		t.Errorf("the last run saw conditions %v, want Ready True", got)
	}

	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":5}}`)
	waitConditions(t, c, ns, "w", metav1.ConditionFalse, "size 5 is over 3")
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	waitConditions(t, c, ns, "w", metav1.ConditionTrue, "size 2")
	if n := r.count("size", "w"); n != 3 {
		t.Errorf("size ran %d times, want 3", n)
	}
	steady(t, "runs of conds on the Widget, whose conditions only the adapter wrote", time.Second, func() int { return r.count("conds", "w") })
	if n := r.count("conds", "w"); n != 1 {
		t.Errorf("conds ran %d times on the Widget, want 1 (its creation): the adapter's conditions ran it", n)
	}
	if _, ok := annotationOf(get(t, c, podsGVR, ns, "p"), k8s.AnnotationStatus); !ok {
		t.Errorf("the Pod has no %s annotation: its statuses are written there", k8s.AnnotationStatus)
	}
}
