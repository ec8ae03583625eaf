package k8s_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestConditionsAsConventionsAllow: with condition types chosen by the
// author, an abnormal-true Degraded and no summary condition, a Widget
// shows Available Unknown (Reconciling) while its handler has not
// decided, Unknown while it reports progress (maintenance), then True;
// Degraded is True while its handler is blocked and False once it is
// active; no Ready is ever written.
func TestConditionsAsConventionsAllow(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	release := make(chan struct{})
	opts := k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
		Conditions: map[string]k8s.Condition{
			"avail":   {Type: "Available"},
			"degrade": {Type: "Degraded", AbnormalTrue: true},
		},
		NoSummaryCondition: true,
	}
	register := func(b *opbus.Bus) {
		must(t, b.Handle("avail", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return opbus.Status{}, ctx.Err()
			}
			if ev.New["spec"].(map[string]any)["size"] == int64(1) {
				return opbus.Maintenance("scaling"), nil
			}
			return opbus.Active("available"), nil
		}, opbus.On{Fields: []string{"spec"}}))
		must(t, b.Handle("degrade", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.New["spec"].(map[string]any)["size"] == int64(1) {
				return opbus.Blocked("size 1 is too small").WithReason("TooSmall"), nil
			}
			return opbus.Active("fine"), nil
		}, opbus.On{Fields: []string{"spec"}}))
	}
	start(t, opts, register)
	createWidget(t, c, ns, "w", `{"size":1}`)
	cond := func(typ string) metav1.Condition {
		return conditionsOf(get(t, c, widgetsGVR, ns, "w"))[typ]
	}
	eventually(t, "Available Unknown, Reconciling", func() bool {
		a := cond("Available")
		return a.Status == metav1.ConditionUnknown && a.Reason == k8s.ReasonReconciling
	})
	close(release)
	eventually(t, "Available Unknown (in progress) and Degraded True", func() bool {
		a, d := cond("Available"), cond("Degraded")
		return a.Status == metav1.ConditionUnknown && a.Reason == "Maintenance" && d.Status == metav1.ConditionTrue && d.Reason == "TooSmall"
	})
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	eventually(t, "Available True and Degraded False", func() bool {
		a, d := cond("Available"), cond("Degraded")
		return a.Status == metav1.ConditionTrue && d.Status == metav1.ConditionFalse && a.ObservedGeneration == 2
	})
	u := get(t, c, widgetsGVR, ns, "w")
	for typ := range conditionsOf(u) {
		if typ != "Available" && typ != "Degraded" {
			t.Errorf("condition %s written, want Available and Degraded alone (no summary)", typ)
		}
	}

	// An entry for a slot that does not exist fails Run, naming the one meant.
	bad := opts
	bad.Conditions = map[string]k8s.Condition{"avial": {Type: "Available"}}
	src, err := k8s.New(&bad)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	register(bus)
	if err := src.Run(t.Context(), bus); err == nil || !strings.Contains(err.Error(), `did you mean "avail"?`) {
		t.Errorf("Run with Conditions[avial]: %v, want an error suggesting avail", err)
	}
}
