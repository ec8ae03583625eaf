package k8s_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/internal/kubeenv"
)

// TestClearedConditionsRestored clears status.conditions of a Widget whose
// "size" handler is Blocked, as another writer would (the list removed,
// then the list emptied): the adapter writes the slot conditions and
// Ready back from the bus's slots, False with the Blocked message, and
// runs no handler for it.
func TestClearedConditionsRestored(t *testing.T) {
	t.Parallel()
	env := kubeenv.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var r runs
	start(t, k8s.Options{
		Config:    env.AdminConfig(),
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
	}, widgetHandlers(t, &r))
	createWidget(t, c, ns, "w", `{"size":5}`)
	blocked := func() error {
		u := get(t, c, widgetsGVR, ns, "w")
		conds := conditionsOf(u)
		for _, err := range []error{
			checkCondition(conds, "Ready", metav1.ConditionFalse, "Blocked", "size 5 is over 3", u.GetGeneration()),
			checkCondition(conds, "size", metav1.ConditionFalse, "Blocked", "size 5 is over 3", u.GetGeneration()),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	eventually(t, "Ready and size False, Blocked", func() bool { err = blocked(); return err == nil })
	ran := r.total()

	for _, clear := range []string{`{"status":{"conditions":null}}`, `{"status":{"conditions":[]}}`} {
		patch(t, c, widgetsGVR, ns, "w", clear, "status")
		deadline := time.Now().Add(waitFor)
		for err = blocked(); err != nil && time.Now().Before(deadline); err = blocked() {
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("after %s: %v", clear, err)
		}
	}
	if n := r.total(); n != ran {
		t.Errorf("%d handler runs after the conditions were cleared, want none", n-ran)
	}
}

// TestRemovedRecordRestored removes the record annotation of a handled
// Widget by hand: the adapter writes the record back, without running a
// handler, and after a restart no handler runs again for the values
// already handled.
func TestRemovedRecordRestored(t *testing.T) {
	t.Parallel()
	env := kubeenv.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	opts := k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}

	var first runs
	op := start(t, opts, widgetHandlers(t, &first))
	createWidget(t, c, ns, "w", `{"size":2}`)
	var record string
	eventually(t, "a record that holds the handled values", func() bool {
		record, _ = annotationOf(get(t, c, widgetsGVR, ns, "w"), k8s.AnnotationRecord)
		return first.count("all", "w") == 1 && first.count("size", "w") == 1 && len(record) > 20
	})
	ran := first.total()

	patch(t, c, widgetsGVR, ns, "w", fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k8s.AnnotationRecord))
	var got string
	eventually(t, "the record written back", func() bool {
		got, _ = annotationOf(get(t, c, widgetsGVR, ns, "w"), k8s.AnnotationRecord)
		return got != ""
	})
	if got != record {
		t.Errorf("record written back:\n%s\nwant the one removed:\n%s", got, record)
	}
	time.Sleep(time.Second)
	if n := first.total(); n != ran {
		t.Errorf("%d handler runs after the record was removed, want none", n-ran)
	}
	op.stop(t)

	var second runs
	op = start(t, opts, widgetHandlers(t, &second))
	eventually(t, "the restarted bus observes the widget", func() bool { return op.bus.Stats().Observed > 0 })
	time.Sleep(2 * time.Second)
	if n := second.total(); n != 0 {
		t.Errorf("%d handler runs after the restart, want none: %v", n, second.of("all", "w"))
	}
}
