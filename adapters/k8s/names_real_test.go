package k8s_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestTwoOperatorsKeepApart runs two Sources of different names on the
// same Widget: each keeps its own record, conditions and Ready.
func TestTwoOperatorsKeepApart(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	res := []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}

	var first, second runs
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: res}, func(b *opbus.Bus) {
		must(t, b.Handle("size", first.handler(func(ev *opbus.Event) opbus.Status {
			size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
			return opbus.Active(fmt.Sprintf("size %d", size))
		}), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
	})
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: res, Name: "audit"}, func(b *opbus.Bus) {
		must(t, b.Handle("color", second.handler(func(ev *opbus.Event) opbus.Status {
			color, _, _ := unstructured.NestedString(ev.New, "spec", "color")
			return opbus.Blocked("color " + color)
		}), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.color"}}))
	})

	createWidget(t, c, ns, "w", `{"size":1,"color":"red"}`)
	eventually(t, "both handle the new Widget", func() bool { return first.count("size", "w") == 1 && second.count("color", "w") == 1 })
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"color":"blue"}}`)
	var u *unstructured.Unstructured
	eventually(t, "both operators' conditions are there", func() bool {
		u = get(t, c, widgetsGVR, ns, "w")
		conds := conditionsOf(u)
		return conds["Size"].Message == "size 2" && conds["Ready"].Status == metav1.ConditionTrue &&
			conds["audit.opbus.dev/Color"].Message == "color blue" && conds["audit.opbus.dev/Ready"].Status == metav1.ConditionFalse
	})
	for _, name := range []string{k8s.AnnotationRecord, "audit.opbus.dev/record"} {
		if v, ok := annotationOf(u, name); !ok || v == "" {
			t.Errorf("record %s = %q, want a record", name, v)
		}
	}
	if n, m := first.count("size", "w"), second.count("color", "w"); n != 2 || m != 2 {
		t.Errorf("size ran %d times, color %d; want 2 each (create and one change)", n, m)
	}
}
