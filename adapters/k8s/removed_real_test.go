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

// TestRemovedHandlerConditionRemoved runs handlers a and b, then restarts
// with a alone: at the next change of the object, b's condition goes and
// Ready reflects a alone.
func TestRemovedHandlerConditionRemoved(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	opts := k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}
	a := func(r *runs) func(b *opbus.Bus) {
		return func(b *opbus.Bus) {
			must(t, b.Handle("a", r.handler(func(ev *opbus.Event) opbus.Status {
				size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
				return opbus.Active(fmt.Sprintf("size %d", size))
			}), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		}
	}

	var first runs
	op := start(t, opts, func(b *opbus.Bus) {
		a(&first)(b)
		must(t, b.Handle("b", first.handler(func(*opbus.Event) opbus.Status { return opbus.Blocked("b blocks") }),
			opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
	})
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "conditions a and b, Ready False", func() bool {
		conds := conditionsOf(get(t, c, widgetsGVR, ns, "w"))
		return conds["A"].Status == metav1.ConditionTrue && conds["B"].Status == metav1.ConditionFalse &&
			conds["Ready"].Status == metav1.ConditionFalse
	})
	op.stop(t)

	var second runs
	start(t, opts, a(&second))
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	eventually(t, "a handles the change", func() bool { return second.count("a", "w") == 1 })
	var got map[string]metav1.Condition
	eventually(t, "b's condition is gone and Ready is True", func() bool {
		got = conditionsOf(get(t, c, widgetsGVR, ns, "w"))
		_, b := got["B"]
		return !b && got["Ready"].Status == metav1.ConditionTrue && got["A"].Message == "size 2"
	})
	if len(got) != 2 {
		t.Errorf("conditions %v, want Ready and a", got)
	}
}
