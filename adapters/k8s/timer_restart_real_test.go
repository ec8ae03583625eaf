package k8s_test

import (
	"sync"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// dueTimes records when each due run of a handler was due: the time the
// bus reports it, less its lateness.
type dueTimes struct {
	mu   sync.Mutex
	due  []time.Time
	late []time.Duration
}

func (d *dueTimes) Observed(opbus.Key, int)                              {}
func (d *dueTimes) Coalesced(opbus.Key)                                  {}
func (d *dueTimes) Handled(opbus.Key, string, int, time.Duration, error) {}
func (d *dueTimes) Retrying(opbus.Key, time.Duration)                    {}
func (d *dueTimes) TimerDue(_ opbus.Key, _ string, late time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.due = append(d.due, time.Now().Add(-late))
	d.late = append(d.late, late)
}

func (d *dueTimes) get() ([]time.Time, []time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.due...), append([]time.Duration(nil), d.late...)
}

// TestTimerAcrossRestart: a handler with On.Every runs on its grid; the
// operator stops for several periods and a new Source and bus start
// against the same API server. The schedule's anchor comes back from the
// record: the new bus runs the handler once for all the missed due times
// (not once each), and then on the first operator's grid, not on one
// that starts at the restart.
func TestTimerAcrossRestart(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	const every = time.Second
	var r runs
	opts := k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}
	register := func(b *opbus.Bus) {
		must(t, b.Handle("tick", r.handler(func(*opbus.Event) opbus.Status { return opbus.Active("ok") }),
			opbus.On{Fields: []string{"spec"}, Every: every}))
	}
	var first dueTimes
	op := startBus(t, opts, opbus.Options{Observer: &first}, register)
	createWidget(t, dynClient(t, env.AdminConfig()), ns, "x", `{"size":1}`)
	eventually(t, "two due runs", func() bool { d, _ := first.get(); return len(d) >= 2 })
	op.stop(t)
	grid, _ := first.get()
	stopped := time.Now()

	time.Sleep(3*every + every/2) // three due times or more go by
	var second dueTimes
	restarted := time.Now()
	startBus(t, opts, opbus.Options{Observer: &second}, register)
	eventually(t, "three due runs after the restart", func() bool { d, _ := second.get(); return len(d) >= 3 })
	due, late := second.get()
	t.Logf("stopped %v after the first due time, restarted %v later; due runs after the restart: late by %v", stopped.Sub(grid[0]).Round(time.Millisecond), restarted.Sub(stopped).Round(time.Millisecond), late)

	// One run for the missed due times, soon after the restart.
	if late[0] < 2*every {
		t.Errorf("first due run after the restart was %v late, want more than %v: it stands for the due times missed while stopped", late[0], 2*every)
	}
	if ran := due[0].Add(late[0]); ran.Sub(restarted) > every {
		t.Errorf("the missed due times ran %v after the restart, want within %v", ran.Sub(restarted), every)
	}
	for i, l := range late[1:] {
		if l >= every/2 {
			t.Errorf("due run %d after the restart was %v late: missed due times are made up one by one", i+2, l)
		}
	}
	// The later runs stay on the first operator's grid.
	for i, d := range due[1:] {
		off := d.Sub(grid[0]) % every
		if off > every/2 {
			off -= every
		}
		if off < -50*time.Millisecond || off > 50*time.Millisecond {
			t.Errorf("due run %d after the restart was due %v off the first operator's grid (anchor %v, every %v): the grid was reset", i+2, off, grid[0].Format(time.StampMilli), every)
		}
	}
	if n := r.count("tick", "x"); n < 6 {
		t.Errorf("%d runs in all, want the create run, two due runs, and three after the restart", n)
	}
}
