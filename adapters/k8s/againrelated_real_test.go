package k8s_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
	"github.com/opbus/opbus/opbustest"
)

// TestAgainAcrossRestartWithRelated: a handler that reads related objects
// and calls Event.Again (a CronJob controller reading its Jobs) keeps its
// schedule across a restart: a due time missed while no bus ran is one
// due run at the object's first pass. Before, that pass compared the
// handler's value without its related objects' sums with the stored
// digest, which holds them: they never matched, and the due run never
// came.
func TestAgainAcrossRestartWithRelated(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	clock := opbustest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespaces: []string{ns}, Owned: true},
	}}
	var r runs
	register := func(b *opbus.Bus) {
		must(t, b.Handle("poll", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			r.add(ev)
			ev.Again(time.Minute)
			return opbus.Active(""), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec", `related.ConfigMap[*].data`}}))
	}
	first := startBus(t, opts, opbus.Options{Clock: clock}, register)
	createWidget(t, dynClient(t, env.AdminConfig()), ns, "w", `{"size":1}`)
	eventually(t, "the first run, its Again armed", func() bool { return r.count("poll", "w") == 1 && clock.Pending() == 1 })
	clock.Advance(time.Minute)
	eventually(t, "a due run", func() bool { return dueRuns(r.of("poll", "w")) == 1 && clock.Pending() == 1 })
	first.stop(t)

	clock.Advance(2 * time.Minute) // due times go by while no bus runs
	startBus(t, opts, opbus.Options{Clock: clock}, register)
	eventually(t, "the due times missed while stopped, as one due run at the first pass", func() bool {
		return dueRuns(r.of("poll", "w")) == 2
	})
	steady(t, "no other run", 500*time.Millisecond, func() int { return r.count("poll", "w") })
	if n := r.count("poll", "w"); n != 3 {
		t.Errorf("%d runs, want the first, one due run before the restart and one after", n)
	}
}
