package fsm_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

// jobSpec is a machine with a self-transition, a state with two sources
// and a final state.
func jobSpec() fsm.Spec {
	return fsm.Spec{
		Name:    "job",
		Initial: "idle",
		States: []fsm.State{
			{Name: "idle"},
			{Name: "queued", Status: opbus.Waiting("queued")},
			{Name: "running", Status: opbus.Active("running")},
			{Name: "done", Status: opbus.Active("done")},
			{Name: "failed", Status: opbus.Blocked("job failed")},
		},
		Triggers: []fsm.Trigger{
			{Name: "submit", Src: []string{"idle"}, Dst: "queued"},
			{Name: "start", Src: []string{"queued"}, Dst: "running"},
			{Name: "touch", Src: []string{"running"}, Dst: "running"},
			{Name: "finish", Src: []string{"running"}, Dst: "done"},
			{Name: "fail", Src: []string{"queued", "running"}, Dst: "failed"},
			{Name: "retry", Src: []string{"failed"}, Dst: "queued"},
		},
	}
}

// generation makes every state a harness dispatches differ from the last,
// across harnesses sharing a store.
var generation atomic.Int64

// harness runs code inside a handler of a real bus, on one object.
type harness struct {
	t   *testing.T
	bus *opbus.Bus
	m   *fsm.Machine
	key opbus.Key
	do  func(ctx context.Context, ev *opbus.Event) error
}

// newHarness registers a machine for spec on a new bus over store (nil for
// a memory store) and a handler "drive" that runs what the test asks.
func newHarness(t *testing.T, spec fsm.Spec, store opbus.Store) *harness {
	t.Helper()
	bus, err := opbus.New(&opbus.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	m, err := fsm.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(bus); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, bus: bus, m: m, key: opbus.Key{Kind: "Job", Namespace: "ns", Name: "j1"}}
	err = bus.Handle("drive", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		if h.do == nil {
			return opbus.Status{}, nil
		}
		return opbus.Status{}, h.do(ctx, ev)
	}, opbus.On{Fields: []string{"spec.n"}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// run dispatches a new state of the object, with fn as the drive handler,
// and returns the dispatch's error.
func (h *harness) run(ctx context.Context, fn func(ctx context.Context, ev *opbus.Event) error) error {
	h.do = fn
	defer func() { h.do = nil }()
	obj := map[string]any{
		"metadata": map[string]any{"uid": "uid-1"},
		"spec":     map[string]any{"n": generation.Add(1)},
	}
	return h.bus.Dispatch(ctx, h.key, obj)
}

// fire fires event from inside a handler and returns what Fire returned.
func (h *harness) fire(event string) (fsm.Result, error) {
	h.t.Helper()
	var res fsm.Result
	var ferr error
	err := h.run(context.Background(), func(ctx context.Context, ev *opbus.Event) error {
		res, ferr = h.m.Fire(ctx, ev, event)
		return nil
	})
	if err != nil {
		h.t.Fatalf("dispatch: %v", err)
	}
	return res, ferr
}

// mustFire fires events in order, failing the test on any error.
func (h *harness) mustFire(events ...string) {
	h.t.Helper()
	for _, e := range events {
		if _, err := h.fire(e); err != nil {
			h.t.Fatalf("Fire(%q): %v", e, err)
		}
	}
}

// state returns the machine's state of the object, read in a handler.
func (h *harness) state() string {
	h.t.Helper()
	var state string
	err := h.run(context.Background(), func(ctx context.Context, ev *opbus.Event) error {
		var err error
		state, err = h.m.State(ev)
		return err
	})
	if err != nil {
		h.t.Fatalf("reading the state: %v", err)
	}
	return state
}

// status returns the object's overall status and its machine slot.
func (h *harness) status() (overall, slot opbus.Status) {
	h.t.Helper()
	overall, slots, err := h.bus.Status(context.Background(), h.key)
	if err != nil {
		h.t.Fatal(err)
	}
	slot = slots[h.m.Name()]
	return overall, slot
}

// checkErr reports err unless it wraps want (nil for none) and its message
// contains every one of msgs.
func checkErr(t *testing.T, err, want error, msgs ...string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want one wrapping %v", err, want)
	}
	for _, msg := range msgs {
		if !strings.Contains(err.Error(), msg) {
			t.Errorf("error %q does not contain %q", err, msg)
		}
	}
	// A dispatch error is the bus's, wrapping the machine's.
	if msg := err.Error(); !strings.HasPrefix(msg, "fsm: ") && !(strings.HasPrefix(msg, "opbus: handler") && strings.Contains(msg, ": fsm: ")) {
		t.Errorf("error %q does not start with \"fsm: \"", err)
	}
}
