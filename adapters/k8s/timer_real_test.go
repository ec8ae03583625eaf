package k8s_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestTimerRunsWriteNothing checks against a real API server that due runs
// whose results do not change (a periodic handler, a handler polling with
// Event.Again) make no API write: the record holds each schedule's anchor,
// written when the schedule starts, not each run; and that the object's
// own state reaches the bus once.
func TestTimerRunsWriteNothing(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	var w writes
	var r runs
	op := startBus(t, k8s.Options{Config: w.wrap(env.AdminConfig()), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		opbus.Options{}, func(b *opbus.Bus) {
			must(t, b.Handle("tick", r.handler(func(*opbus.Event) opbus.Status { return opbus.Active("ok") }),
				opbus.On{Fields: []string{"spec"}, Every: 200 * time.Millisecond}))
			must(t, b.Handle("poll", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				r.add(ev)
				ev.Again(300 * time.Millisecond)
				return opbus.Waiting("polling"), nil
			}, opbus.On{Fields: []string{"spec"}}))
		})
	createWidget(t, dynClient(t, env.AdminConfig()), ns, "x", `{"size":1}`)
	eventually(t, "both handlers have run when due", func() bool {
		return dueRuns(r.of("tick", "x")) >= 2 && dueRuns(r.of("poll", "x")) >= 1
	})
	ticks, polls, before := dueRuns(r.of("tick", "x")), dueRuns(r.of("poll", "x")), len(w.to("widgets", "x"))
	time.Sleep(2 * time.Second)
	ticks, polls = dueRuns(r.of("tick", "x"))-ticks, dueRuns(r.of("poll", "x"))-polls
	written := w.to("widgets", "x")[before:]
	t.Logf("over 2s: %d due runs of tick (every 200ms), %d of poll (every 300ms), %d writes to the object; %d writes before", ticks, polls, len(written), before)
	if ticks < 5 || polls < 3 {
		t.Errorf("%d due runs of tick and %d of poll in 2s, want about 10 and 6", ticks, polls)
	}
	if len(written) != 0 {
		t.Errorf("%d writes to the object for due runs whose results did not change, want none:\n%s", len(written), strings.Join(written, "\n"))
	}
	if n := op.bus.Stats().Observed; n != 1 {
		t.Errorf("the bus was given %d states of the object, want 1", n)
	}
}

// dueRuns counts the runs of evs that were due to a schedule.
func dueRuns(evs []*opbus.Event) int {
	n := 0
	for _, ev := range evs {
		if ev.Due {
			n++
		}
	}
	return n
}
