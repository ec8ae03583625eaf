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

// widgetHandlers registers the handlers of the custom resource tests:
// "size" blocks on a size over 3, "my phase" waits until status.phase is
// Ready and then clears its slot, "all" sees every change.
func widgetHandlers(t *testing.T, r *runs) func(b *opbus.Bus) {
	return func(b *opbus.Bus) {
		must(t, b.Handle("size", r.handler(func(ev *opbus.Event) opbus.Status {
			size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
			if size > 3 {
				return opbus.Blocked(fmt.Sprintf("size %d is over 3", size))
			}
			return opbus.Active(fmt.Sprintf("size %d", size))
		}), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		must(t, b.Handle("my phase", r.handler(func(ev *opbus.Event) opbus.Status {
			phase, _, _ := unstructured.NestedString(ev.New, "status", "phase")
			if phase != "Ready" {
				return opbus.Waiting("phase is " + phase)
			}
			return opbus.Status{}
		}), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"status.phase"}}))
		must(t, b.Handle("all", r.handler(func(*opbus.Event) opbus.Status { return opbus.Status{} }), opbus.On{}))
	}
}

// checkCondition compares one condition with what is expected.
func checkCondition(conds map[string]metav1.Condition, typ string, status metav1.ConditionStatus, reason, msg string, gen int64) error {
	c, ok := conds[typ]
	if !ok {
		return fmt.Errorf("no condition %s", typ)
	}
	if c.Status != status || c.Reason != reason || c.Message != msg || c.ObservedGeneration != gen {
		return fmt.Errorf("condition %s: got %s %s %q generation %d, want %s %s %q generation %d",
			typ, c.Status, c.Reason, c.Message, c.ObservedGeneration, status, reason, msg, gen)
	}
	return nil
}

// TestCustomResourceConditions checks the statuses written on a custom
// resource: a condition per slot and a summary Ready matching the slots,
// written without ever running a handler again (the count and the
// object's resource version stay the same over 5 s of quiet), and updated
// by the rules of meta.SetStatusCondition as the slots change.
func TestCustomResourceConditions(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var r runs
	start(t, k8s.Options{
		Config:    env.AdminConfig(),
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
	}, widgetHandlers(t, &r))

	createWidget(t, c, ns, "w", `{"size":5}`)
	phaseType := k8s.ConditionType("my phase")
	var last *unstructured.Unstructured
	settled := func(check func(conds map[string]metav1.Condition, gen int64) error) {
		t.Helper()
		var err error
		deadline := time.Now().Add(waitFor)
		for time.Now().Before(deadline) {
			last = get(t, c, widgetsGVR, ns, "w")
			if err = check(conditionsOf(last), last.GetGeneration()); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("conditions of the widget: %v (status %v)", err, last.Object["status"])
	}
	settled(func(conds map[string]metav1.Condition, gen int64) error {
		for _, err := range []error{
			checkCondition(conds, "Ready", metav1.ConditionFalse, "Blocked", "size 5 is over 3", gen),
			checkCondition(conds, "Size", metav1.ConditionFalse, "Blocked", "size 5 is over 3", gen),
			checkCondition(conds, phaseType, metav1.ConditionFalse, "Waiting", "phase is ", gen),
		} {
			if err != nil {
				return err
			}
		}
		if len(conds) != 3 {
			return fmt.Errorf("%d conditions, want 3: %v", len(conds), conds)
		}
		return nil
	})
	if n := r.count("all", "w"); n != 1 {
		t.Errorf("all ran %d times, want once (on create)", n)
	}
	if _, ok := annotationOf(last, k8s.AnnotationRecord); !ok {
		t.Errorf("no record annotation on the widget")
	}

	// 5 s of quiet: no handler runs and nothing writes.
	steady(t, "handler runs and the widget's resource version", 5*time.Second, func() string {
		return fmt.Sprintf("%d runs, resourceVersion %s", r.total(), get(t, c, widgetsGVR, ns, "w").GetResourceVersion())
	})
	readySince := conditionsOf(last)["Ready"].LastTransitionTime

	// Another writer sets the phase: "my phase" clears its slot, whose
	// condition goes; Ready stays False, so its lastTransitionTime stays.
	patch(t, c, widgetsGVR, ns, "w", `{"status":{"phase":"Ready"}}`, "status")
	settled(func(conds map[string]metav1.Condition, gen int64) error {
		if _, ok := conds[phaseType]; ok {
			return fmt.Errorf("condition %s of a cleared slot is still there", phaseType)
		}
		return checkCondition(conds, "Ready", metav1.ConditionFalse, "Blocked", "size 5 is over 3", gen)
	})
	if got := conditionsOf(last)["Ready"].LastTransitionTime; !got.Equal(&readySince) {
		t.Errorf("Ready's lastTransitionTime moved from %v to %v without a change of status", readySince, got)
	}

	// A spec change makes every slot active: Ready turns True, with the new
	// generation observed.
	time.Sleep(1100 * time.Millisecond) // lastTransitionTime has a resolution of a second
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	settled(func(conds map[string]metav1.Condition, gen int64) error {
		if gen < 2 {
			return fmt.Errorf("generation %d, want at least 2", gen)
		}
		return checkCondition(conds, "Ready", metav1.ConditionTrue, "Active", "size 2", gen)
	})
	if got := conditionsOf(last)["Ready"].LastTransitionTime; !got.After(readySince.Time) {
		t.Errorf("Ready's lastTransitionTime %v did not move on from %v when its status changed", got, readySince)
	}
	steady(t, "handler runs", time.Second, r.total)
	for h, want := range map[string]int{"size": 2, "my phase": 2, "all": 3} {
		if n := r.count(h, "w"); n != want {
			t.Errorf("%s ran %d times, want %d", h, n, want)
		}
	}
}

// TestStatusChangeByAnotherWriter checks what controller-runtime's
// GenerationChangedPredicate loses: a change of status made by another
// writer, which leaves metadata.generation alone, runs the handlers
// subscribed to it and the whole-object handlers.
func TestStatusChangeByAnotherWriter(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var r runs
	start(t, k8s.Options{
		Config:    env.AdminConfig(),
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
	}, widgetHandlers(t, &r))
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "create handlers run", func() bool { return r.count("all", "w") == 1 && r.count("my phase", "w") == 1 })
	gen := get(t, c, widgetsGVR, ns, "w").GetGeneration()

	for i, phase := range []string{"Pending", "Running", "Ready"} {
		patch(t, c, widgetsGVR, ns, "w", fmt.Sprintf(`{"status":{"phase":%q}}`, phase), "status")
		eventually(t, "my phase runs for phase "+phase, func() bool { return r.count("my phase", "w", opbus.Update) == i+1 })
		ev := r.of("my phase", "w", opbus.Update)[i]
		if got, want := ev.Changes.String(), changeOfPhase(i, phase); got != want {
			t.Errorf("changes: got %s, want %s", got, want)
		}
	}
	eventually(t, "all runs for each status change", func() bool { return r.count("all", "w", opbus.Update) == 3 })
	if g := get(t, c, widgetsGVR, ns, "w").GetGeneration(); g != gen {
		t.Errorf("generation changed from %d to %d: the test meant status-only changes", gen, g)
	}
	steady(t, "handler runs", time.Second, r.total)
	if n := r.count("size", "w"); n != 1 {
		t.Errorf("size ran %d times, want once: spec.size never changed", n)
	}
}

func changeOfPhase(i int, phase string) string {
	prev := []string{"", "Pending", "Running"}[i]
	if prev == "" {
		return fmt.Sprintf("add status.phase = %q", phase)
	}
	return fmt.Sprintf("change status.phase: %q → %q", prev, phase)
}

// TestObservedGenerationFollowsHandledSpec changes a Widget's spec in a
// way that leaves every status as it was: the conditions are still
// written again, with the new generation as observedGeneration, so that a
// client waiting for observedGeneration to reach metadata.generation
// (kubectl wait, Argo CD, Flux) sees the change handled.
func TestObservedGenerationFollowsHandledSpec(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var r runs
	start(t, k8s.Options{
		Config:    env.AdminConfig(),
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
	}, func(b *opbus.Bus) {
		must(t, b.Handle("size", r.handler(func(*opbus.Event) opbus.Status { return opbus.Active("fine") }),
			opbus.On{Fields: []string{"spec.size"}}))
	})
	observed := func(gen int64) func() bool {
		return func() bool {
			u := get(t, c, widgetsGVR, ns, "w")
			conds := conditionsOf(u)
			return checkCondition(conds, "Ready", metav1.ConditionTrue, "Active", "fine", gen) == nil &&
				checkCondition(conds, "Size", metav1.ConditionTrue, "Active", "fine", gen) == nil
		}
	}
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the conditions observe generation 1", observed(1))
	u := patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	if u.GetGeneration() != 2 {
		t.Fatalf("generation %d after a spec change, want 2", u.GetGeneration())
	}
	eventually(t, "size handles the new spec", func() bool { return r.count("size", "w") == 2 })
	deadline := time.Now().Add(5 * time.Second)
	for !observed(2)() {
		if time.Now().After(deadline) {
			t.Fatalf("the conditions still observe generation %d, not 2, 5s after size handled it: %v",
				conditionsOf(get(t, c, widgetsGVR, ns, "w"))["Ready"].ObservedGeneration, conditionsOf(get(t, c, widgetsGVR, ns, "w")))
		}
		time.Sleep(20 * time.Millisecond)
	}
	steady(t, "handler runs", 500*time.Millisecond, r.total)
}
