package k8s_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestHeldStatusNotUndone: a handler's status fields held for a write
// alone that lands after a newer status of the same handler (it met a
// conflict and tried again, or was given back after a failure) are
// dropped, not written over the newer ones. Before, the older write
// landed last: a CronJob's status.lastScheduleTime went back a minute,
// and its status.active lost a Job, for good (the handler, its value
// handled, did not run again).
func TestHeldStatusNotUndone(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	var r runs
	op := startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		opbus.Options{}, func(b *opbus.Bus) {
			must(t, b.Handle("h", r.handler(nil), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}, Writes: []string{"status.step"}}))
		})
	dyn := dynClient(t, env.AdminConfig())
	createWidget(t, dyn, ns, "w", `{"size":1}`)
	eventually(t, "the handler's run", func() bool { return r.count("h", "w") == 1 })
	key := opbus.Key{Kind: widgetKind, Namespace: ns, Name: "w"}
	if err := k8s.WriteHeldOutOfOrder(t.Context(), op.src, key, "h", map[string]any{"step": int64(1)}, map[string]any{"step": int64(2)}); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if step, _, _ := unstructured.NestedInt64(got.Object, "status", "step"); step != 2 {
		t.Errorf("status.step is %d after the newer status (2) landed and then the older (1) was written, want 2", step)
	}
}

// TestStatusNotSkippedWhileOneIsPending: a handler's ApplyStatus of what
// the object already shows is not skipped while an earlier status of the
// handler is held or being written, which would change the object after
// it. Before, it was skipped as unchanged (what the handler applied last
// was what the object showed), and the earlier status landed last and
// stayed: a CronJob's status.active kept a Job deleted since.
func TestStatusNotSkippedWhileOneIsPending(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	var r runs
	var op *operator
	op = startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		opbus.Options{}, func(b *opbus.Bus) {
			must(t, b.Handle("h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				r.add(ev)
				return opbus.Active(""), op.src.Client(ev).ApplyStatus(ctx, map[string]any{"step": int64(1)})
			}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}, Writes: []string{"status.step"}}))
		})
	dyn := dynClient(t, env.AdminConfig())
	createWidget(t, dyn, ns, "w", `{"size":1}`)
	key := opbus.Key{Kind: widgetKind, Namespace: ns, Name: "w"}
	step := func() int64 {
		got, err := dyn.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, _, _ := unstructured.NestedInt64(got.Object, "status", "step")
		return n
	}
	eventually(t, "status.step 1 written, through the held status of the first run", func() bool {
		return step() == 1 && k8s.StatusesLanded(op.src, key, "h") > 0
	})

	write, seq, err := k8s.HoldInFlight(op.src, key, "h", map[string]any{"step": int64(2)}) // an earlier status, under way
	if err != nil {
		t.Fatal(err)
	}
	// The handler runs again and applies step 1, which the object shows.
	if _, err := dyn.Resource(widgetsGVR).Namespace(ns).Patch(t.Context(), "w", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler's second run", func() bool { return r.count("h", "w") == 2 })
	eventually(t, "its status written, not skipped", func() bool { return k8s.StatusesLanded(op.src, key, "h") > seq })
	if err := write(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := step(); n != 1 {
		t.Errorf("status.step is %d after the handler applied 1 while an earlier 2 was under way, want 1", n)
	}
}
