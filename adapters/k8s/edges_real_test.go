package k8s_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestObservedGenerationRetried: a spec change handled with the same
// status as before needs a write of observedGeneration alone; while an
// admission policy refuses it, it is retried with backoff, and it lands
// once the policy is gone, with no handler run and no change of the
// Widget.
// Before, the failed write was logged and never tried again: the
// conditions kept generation 1 for good.
func TestObservedGenerationRetried(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	policy := admissionPolicy(t, c, ns, "widgets/status",
		`!has(object.status) || !has(object.status.conditions) || object.status.conditions.all(x, !has(x.observedGeneration) || x.observedGeneration < 2)`,
		"observedGeneration 2 refused",
		`{"status":{"conditions":[{"type":"X","status":"True","reason":"R","message":"","lastTransitionTime":"2026-01-01T00:00:00Z","observedGeneration":2}]}}`)
	var r runs
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("h", r.handler(func(*opbus.Event) opbus.Status { return opbus.Active("same") }), opbus.On{Fields: []string{"spec"}}))
		})
	w := obj(t, `{"apiVersion":"test.opbus.dev/v1","kind":"Widget","metadata":{"name":"w","labels":{%q:%q}},"spec":{"size":1}}`, refuseLabel, ns)
	if _, err := c.Resource(widgetsGVR).Namespace(ns).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gen := func() int64 {
		return conditionsOf(get(t, c, widgetsGVR, ns, "w"))[k8s.ConditionReady].ObservedGeneration
	}
	eventually(t, "Ready True at generation 1", func() bool {
		r := conditionsOf(get(t, c, widgetsGVR, ns, "w"))[k8s.ConditionReady]
		return r.Status == metav1.ConditionTrue && r.ObservedGeneration == 1
	})
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	eventually(t, "the handler's second run", func() bool { return r.count("h", "w") == 2 })
	time.Sleep(time.Second) // the write of generation 2 is refused, and retried
	if g := gen(); g != 1 {
		t.Fatalf("observedGeneration %d while the policy refuses 2", g)
	}
	// The policy goes (its binding; made again for the cleanup), with no
	// change of the Widget: only a retry can write generation 2.
	if err := c.Resource(bindingsGVR).Delete(t.Context(), policy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		b := obj(t, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":%q},"spec":{"policyName":%q,"validationActions":["Deny"]}}`, policy, policy)
		if _, err := c.Resource(bindingsGVR).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
			t.Error(err)
		}
	}()
	eventually(t, "observedGeneration 2 once the policy lets it through", func() bool { return gen() == 2 })
	if n := r.count("h", "w"); n != 2 {
		t.Errorf("%d runs of the handler, want 2", n)
	}
}

// gadgetCRD has a status subresource whose schema prunes what it does not
// name, status.conditions included.
const gadgetCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "gadgets.test.opbus.dev"},
  "spec": {
    "group": "test.opbus.dev",
    "scope": "Namespaced",
    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "status": {"type": "object", "properties": {"size": {"type": "integer"}}}
      }}}
    }]
  }
}`

// TestPrunedConditionsEvent: on a kind whose CRD schema prunes
// status.conditions, a Gadget whose status changes three times gets one
// Warning Event StatusRefused that says so, and its handler still runs.
// Before, only ERROR lines were logged.
func TestPrunedConditionsEvent(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	env.InstallCRDs(t, obj(t, "%s", gadgetCRD))
	gadgets := schema.GroupVersionResource{Group: "test.opbus.dev", Version: "v1", Resource: "gadgets"}
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var r runs
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: gadgets, Namespaces: []string{ns}}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("h", r.handler(func(ev *opbus.Event) opbus.Status {
				return opbus.Waiting(fmt.Sprint("size ", ev.New["spec"].(map[string]any)["size"]))
			}), opbus.On{Fields: []string{"spec"}}))
		})
	g := obj(t, `{"apiVersion":"test.opbus.dev/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"size":1}}`)
	if _, err := c.Resource(gadgets).Namespace(ns).Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first run", func() bool { return r.count("h", "g") == 1 })
	for size := 2; size <= 3; size++ {
		patch(t, c, gadgets, ns, "g", fmt.Sprintf(`{"spec":{"size":%d}}`, size))
		eventually(t, fmt.Sprint("run ", size), func() bool { return r.count("h", "g") == size })
	}
	eventually(t, "a StatusRefused Event", func() bool { return len(refusalEvents(t, c, ns, k8s.ReasonStatusRefused)["g"]) > 0 })
	time.Sleep(2 * time.Second) // retries with backoff
	evs := refusalEvents(t, c, ns, k8s.ReasonStatusRefused)["g"]
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "status.conditions") || evs[0].Type != "Warning" {
		t.Errorf("StatusRefused Events of the Gadget: %+v, want one Warning that names status.conditions", evs)
	}
	if len(evs) == 1 && evs[0].Count > 1 {
		t.Errorf("the StatusRefused Event counted %d times, want once", evs[0].Count)
	}
}
