package bench

import (
	"context"
	"testing"

	lfsm "github.com/looplab/fsm"
	"github.com/qmuntal/stateless"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

// The fsm family measures one state-machine transition, alternating "go" (a → b) and
// "back" (b → a) so that every op changes state. opbus's fsm can only fire from inside
// a handler (Machine.Fire takes the *opbus.Event being handled), so its public path is
// a bus.Dispatch of a changed object whose handler fires: that includes a whole
// dispatch. A second bus entry makes the same dispatches with a handler that does not
// fire; the difference of the two is the machine's share. The fsm package's own
// benchmark (fsm/bench_test.go) measures Machine.Fire's work without the bus.

// fsmEvents alternate, so that each op is a transition.
var fsmEvents = [2]string{"go", "back"}

// fsmEntry is one entry of the family: setup returns the op, which makes transition i.
type fsmEntry struct {
	name  string // as in FSMPeers
	setup func() (func(ctx context.Context, i int) error, error)
}

var fsmEntries = []fsmEntry{
	{name: Opbus + "-bus-fire", setup: func() (func(context.Context, int) error, error) {
		mb, err := newMachineBus(true)
		if err != nil {
			return nil, err
		}
		return mb.op, nil
	}},
	{name: Opbus + "-bus-nofire", setup: func() (func(context.Context, int) error, error) {
		mb, err := newMachineBus(false)
		if err != nil {
			return nil, err
		}
		return mb.op, nil
	}},
	{name: "looplab", setup: func() (func(context.Context, int) error, error) {
		f := lfsm.NewFSM("a", lfsm.Events{
			{Name: "go", Src: []string{"a"}, Dst: "b"},
			{Name: "back", Src: []string{"b"}, Dst: "a"},
		}, nil)
		return func(ctx context.Context, i int) error { return f.Event(ctx, fsmEvents[i&1]) }, nil
	}},
	{name: "stateless", setup: func() (func(context.Context, int) error, error) {
		sm := stateless.NewStateMachine("a")
		sm.Configure("a").Permit("go", "b")
		sm.Configure("b").Permit("back", "a")
		return func(ctx context.Context, i int) error { return sm.FireCtx(ctx, fsmEvents[i&1]) }, nil
	}},
	{name: FSMFloor, setup: func() (func(context.Context, int) error, error) {
		t := transitionTable{{"a", "go"}: "b", {"b", "back"}: "a"}
		state := "a"
		return func(_ context.Context, i int) error {
			next, err := t.fire(state, fsmEvents[i&1])
			state = next
			return err
		}, nil
	}},
}

// transitionTable is the floor: the destination of each (state, event) allowed.
type transitionTable map[[2]string]string

func (t transitionTable) fire(state, event string) (string, error) {
	if next, ok := t[[2]string{state, event}]; ok {
		return next, nil
	}
	return state, fsm.ErrNotAllowed
}

// machineBus is the setup of the bus entries: a machine a ⇄ b registered with a bus,
// and a handler on spec.n that fires the event leading out of the object's current
// state (fire), or only reads that state (!fire). Each op dispatches the object with
// spec.n changed, so that the handler runs; the machine's state is kept in the object's
// record in the in-memory store, and its slot follows it.
type machineBus struct {
	bus  *opbus.Bus
	key  opbus.Key
	objs [2]map[string]any
}

func newMachineBus(fire bool) (*machineBus, error) {
	bus, err := opbus.New(nil)
	if err != nil {
		return nil, err
	}
	m, err := fsm.New(fsm.Spec{
		Name:    "toggle",
		Initial: "a",
		States:  []fsm.State{{Name: "a", Status: opbus.Waiting("at a")}, {Name: "b", Status: opbus.Active("at b")}},
		Triggers: []fsm.Trigger{
			{Name: "go", Src: []string{"a"}, Dst: "b"},
			{Name: "back", Src: []string{"b"}, Dst: "a"},
		},
	})
	if err != nil {
		return nil, err
	}
	if err := m.Register(bus); err != nil {
		return nil, err
	}
	err = bus.Handle("flip", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		state, err := m.State(ev)
		if err != nil || !fire {
			return opbus.Status{}, err
		}
		event := "go"
		if state == "b" {
			event = "back"
		}
		_, err = m.Fire(ctx, ev, event)
		return opbus.Status{}, err
	}, opbus.On{Fields: []string{"spec.n"}})
	if err != nil {
		return nil, err
	}
	mb := &machineBus{bus: bus, key: opbus.Key{Kind: "Widget", Namespace: "default", Name: "w"},
		objs: [2]map[string]any{{"spec": map[string]any{"n": int64(1)}}, {"spec": map[string]any{"n": int64(0)}}}}
	// The first sight of the object (n = 0), outside the timed loop: a create, which
	// the handler handles like any change (firing "go" when it fires).
	if err := bus.Dispatch(context.Background(), mb.key, mb.objs[1]); err != nil {
		return nil, err
	}
	return mb, nil
}

// op makes transition i: it dispatches the object with spec.n changed.
func (mb *machineBus) op(ctx context.Context, i int) error {
	return mb.bus.Dispatch(ctx, mb.key, mb.objs[i&1])
}

// BenchmarkFSM: BenchmarkFSM/toggle/<impl>, one transition per op.
func BenchmarkFSM(b *testing.B) {
	ctx := context.Background()
	b.Run("toggle", func(b *testing.B) {
		for _, e := range fsmEntries {
			b.Run(e.name, func(b *testing.B) {
				op, err := e.setup()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := op(ctx, i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// TestFSMEntries checks, outside timing, that every entry makes the transitions it is
// timed on: the bare machines and the floor refuse an event their state does not
// allow, and the bus entry that fires moves the machine's slot between a and b.
func TestFSMEntries(t *testing.T) {
	ctx := context.Background()
	for _, e := range fsmEntries {
		t.Run(e.name, func(t *testing.T) {
			op, err := e.setup()
			if err != nil {
				t.Fatal(err)
			}
			for i := range 6 {
				if err := op(ctx, i); err != nil {
					t.Fatalf("transition %d: %v", i, err)
				}
			}
			if e.name == "looplab" || e.name == "stateless" || e.name == FSMFloor {
				// After 6 transitions the machine is in a again: "back" is refused.
				if err := op(ctx, 1); err == nil {
					t.Error(`"back" from a: got no error, want a refusal`)
				}
			}
		})
	}
	// The machine's slot, and so the object's overall status, follows its state when
	// the handler fires, and stays in the initial state when it does not.
	for _, fire := range []bool{true, false} {
		mb, err := newMachineBus(fire)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := mb.op(ctx, i); err != nil {
				t.Fatal(err)
			}
			// The handler fired on the create already (a → b), so even
			// transitions lead back to a.
			want := "at a"
			if fire && i%2 == 1 {
				want = "at b"
			}
			st, _, err := mb.bus.Status(ctx, mb.key)
			if err != nil {
				t.Fatal(err)
			}
			if st.Message != want {
				t.Errorf("fire=%v, after transition %d: status %q, want %q", fire, i, st.Message, want)
			}
		}
	}
}
