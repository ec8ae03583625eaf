package k8s_test

import (
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
	"github.com/opbus/opbus/opbustest"
)

// TestScheduleOnTestClock checks against a real API server that an
// operator's schedule runs on the clock given to its bus
// (opbus.Options.Clock): a handler due every minute, as a "*/1 * * * *"
// schedule, runs once a minute over ten minutes of a test clock, in
// seconds of wall time, and its runs write nothing to the object.
func TestScheduleOnTestClock(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	clock := opbustest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var w writes
	var r runs
	startBus(t, k8s.Options{Config: w.wrap(env.AdminConfig()), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		opbus.Options{Clock: clock}, func(b *opbus.Bus) {
			must(t, b.Handle("cron", r.handler(func(*opbus.Event) opbus.Status { return opbus.Active("ran") }),
				opbus.On{Fields: []string{"spec"}, Every: time.Minute}))
		})
	createWidget(t, dynClient(t, env.AdminConfig()), ns, "nightly", `{"size":1}`)
	eventually(t, "the handler has run for the new object and armed its schedule", func() bool {
		return len(r.of("cron", "nightly")) == 1 && clock.Pending() == 1
	})
	start := time.Now()
	before := len(w.to("widgets", "nightly"))
	for i := range 10 {
		clock.Advance(time.Minute)
		eventually(t, "a due run each minute of the test clock", func() bool {
			return dueRuns(r.of("cron", "nightly")) == i+1 && clock.Pending() == 1
		})
	}
	took := time.Since(start)
	if n := dueRuns(r.of("cron", "nightly")); n != 10 {
		t.Errorf("%d due runs over ten minutes of the test clock, want 10", n)
	}
	if written := w.to("widgets", "nightly")[before:]; len(written) != 0 {
		t.Errorf("%d writes to the object for due runs whose results did not change, want none: %v", len(written), written)
	}
	t.Logf("ten minutes of a once-a-minute schedule in %v of wall time", took)
}
