package fsm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

var podKey = opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}

// podStep is one observed state of the Pod web and what it leads to.
type podStep struct {
	container  string
	restarts   int
	wantState  string
	wantStatus opbus.Status
}

var podSteps = []podStep{
	{"waiting", 0, "pending", opbus.Waiting("waiting for containers")},
	{"running", 0, "running", opbus.Active("running")},
	{"terminated", 0, "failed", opbus.Blocked("container crashed")},
	{"running", 1, "running", opbus.Active("running")},
	{"terminated", 1, "failed", opbus.Blocked("container crashed")},
}

// podBus is a bus over store with the Pod machine and its rules, and a
// probe registered after them that records the state each dispatch left.
type podBus struct {
	bus   *opbus.Bus
	m     *fsm.Machine
	state string
	types []opbus.EventType
}

func newPodBus(t *testing.T, store opbus.Store) *podBus {
	t.Helper()
	bus, err := opbus.New(&opbus.Options{Store: store, ListKeys: map[string]string{"containerStatuses": "name"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := fsm.New(podSpec())
	if err != nil {
		t.Fatal(err)
	}
	if err := podRules(m); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(bus); err != nil {
		t.Fatal(err)
	}
	p := &podBus{bus: bus, m: m}
	err = bus.Handle("probe", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		p.types = append(p.types, ev.Type)
		var err error
		p.state, err = m.State(ev)
		return opbus.Status{}, err
	}, opbus.On{Types: []opbus.EventType{opbus.Create, opbus.Update, opbus.Resume}, Fields: []string{containerStatuses}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *podBus) step(t *testing.T, s podStep) {
	t.Helper()
	if err := p.bus.Dispatch(context.Background(), podKey, pod("web", s.container, s.restarts)); err != nil {
		t.Fatalf("dispatch %+v: %v", s, err)
	}
	if p.state != s.wantState {
		t.Errorf("after %s (restarts %d): got state %q, want %q", s.container, s.restarts, p.state, s.wantState)
	}
	overall, _, err := p.bus.Status(context.Background(), podKey)
	if err != nil {
		t.Fatal(err)
	}
	if overall != s.wantStatus {
		t.Errorf("after %s (restarts %d): got overall status %v, want %v", s.container, s.restarts, overall, s.wantStatus)
	}
}

// A lifecycle interrupted after any step continues in another process (a
// second bus on the same store) from the state the first one recorded.
func TestPersistence(t *testing.T) {
	for split := 1; split < len(podSteps); split++ {
		t.Run(podSteps[split-1].wantState+"@"+string(rune('0'+split)), func(t *testing.T) {
			dir := t.TempDir()
			store, err := opbus.NewFileStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			first := newPodBus(t, store)
			for _, s := range podSteps[:split] {
				first.step(t, s)
			}

			store2, err := opbus.NewFileStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			second := newPodBus(t, store2)
			last := podSteps[split-1]
			// Before any dispatch, the status is read from the store.
			overall, slots, err := second.bus.Status(context.Background(), podKey)
			if err != nil {
				t.Fatal(err)
			}
			if overall != last.wantStatus {
				t.Errorf("restored overall status: got %v, want %v", overall, last.wantStatus)
			}
			if got := slots["lifecycle"]; got != last.wantStatus {
				t.Errorf("restored machine slot: got %v, want %v", got, last.wantStatus)
			}
			// The same state observed again resumes in the recorded state.
			second.step(t, last)
			if !slices.Equal(second.types, []opbus.EventType{opbus.Resume}) {
				t.Errorf("got probe events %v, want [resume]", second.types)
			}
			for _, s := range podSteps[split:] {
				second.step(t, s)
			}
		})
	}
}

// An unknown state in the store is reported everywhere it is read, naming
// the object and the state, and is never overwritten.
func TestUnknownStoredState(t *testing.T) {
	withLost := jobSpec()
	withLost.States = append(withLost.States, fsm.State{Name: "lost", Status: opbus.ErrorStatus("lost")})
	withLost.Triggers = append(withLost.Triggers, fsm.Trigger{Name: "lose", Src: []string{"running"}, Dst: "lost"})

	store := opbus.NewMemoryStore()
	first := newHarness(t, withLost, store)
	first.mustFire("submit", "start", "lose")

	second := newHarness(t, jobSpec(), store) // a version that does not know "lost"
	var state, fire error
	var in bool
	derr := second.run(context.Background(), func(ctx context.Context, ev *opbus.Event) error {
		_, state = second.m.State(ev)
		_, fire = second.m.Fire(ctx, ev, "finish")
		in = second.m.In("idle", "queued", "running", "done", "failed")(ev)
		return nil
	})
	_, slots, err := second.bus.Status(context.Background(), second.key)
	if err != nil {
		t.Fatal(err)
	}
	slot := slots["job/state"]

	msgs := []string{"Job ns/j1", `stored state "lost"`, "declared: idle, queued, running, done, failed"}
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"the dispatch (the state handler checks on resume)", derr},
		{"Machine.State", state},
		{"Machine.Fire", fire},
		{"the state handler's slot", errors.Join(errors.New(slot.Message), fsm.ErrUnknownState)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, tt.err, fsm.ErrUnknownState, msgs...)
		})
	}
	if slot.Level != opbus.LevelError {
		t.Errorf("got state handler slot %v, want an error", slot)
	}
	if in {
		t.Error("In(every declared state) holds for an unknown state")
	}

	// The record still holds "lost": a version declaring it, retired,
	// reads it and leaves it.
	retired := jobSpec()
	retired.States = append(retired.States, fsm.State{Name: "lost", Retired: true})
	retired.Triggers = append(retired.Triggers, fsm.Trigger{Name: "recover", Src: []string{"lost"}, Dst: "queued"})
	third := newHarness(t, retired, store)
	if got := third.state(); got != "lost" {
		t.Fatalf("got state %q, want the stored lost", got)
	}
	third.mustFire("recover")
	if got := third.state(); got != "queued" {
		t.Errorf("got state %q after recover, want queued", got)
	}
}

func TestIn(t *testing.T) {
	// Each step is a container state, its restarts and spec.replicas.
	steps := []struct {
		container          string
		restarts, replicas int
	}{{"waiting", 0, 1}, {"running", 0, 1}, {"running", 0, 2}, {"terminated", 0, 3}, {"running", 1, 3}}
	tests := []struct {
		name   string
		before bool // the handler is registered before the machine
		states []string
		want   []bool // whether the handler ran at each step
	}{
		{"while running, registered after the machine", false, []string{"running"}, []bool{false, true, true, false, true}},
		{"while running, registered before the machine", true, []string{"running"}, []bool{false, false, true, true, false}},
		{"while pending or failed", false, []string{"pending", "failed"}, []bool{true, false, false, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus, err := opbus.New(&opbus.Options{ListKeys: map[string]string{"containerStatuses": "name"}})
			if err != nil {
				t.Fatal(err)
			}
			m, err := fsm.New(podSpec())
			if err != nil {
				t.Fatal(err)
			}
			if err := podRules(m); err != nil {
				t.Fatal(err)
			}
			var ran bool
			handle := func() error {
				return bus.Handle("scale", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
					ran = true
					return opbus.Status{}, nil
				}, opbus.On{Fields: []string{"spec.replicas"}, When: m.In(tt.states...)})
			}
			if tt.before {
				if err := handle(); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Register(bus); err != nil {
				t.Fatal(err)
			}
			if !tt.before {
				if err := handle(); err != nil {
					t.Fatal(err)
				}
			}
			for i, s := range steps {
				ran = false
				obj := pod("web", s.container, s.restarts)
				obj["spec"] = map[string]any{"replicas": s.replicas}
				if err := bus.Dispatch(context.Background(), podKey, obj); err != nil {
					t.Fatal(err)
				}
				if ran != tt.want[i] {
					t.Errorf("step %d (%s, replicas %d): got ran %v, want %v", i+1, s.container, s.replicas, ran, tt.want[i])
				}
			}
		})
	}
}

func TestInPanicsOnUndeclaredState(t *testing.T) {
	m, err := fsm.New(podSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, states := range [][]string{{"runing"}, {"running", "crashed"}, nil} {
		t.Run(strings.Join(states, ","), func(t *testing.T) {
			defer func() {
				if v := recover(); v == nil {
					t.Errorf("In(%q) did not panic", states)
				} else if msg := v.(string); !strings.HasPrefix(msg, "fsm: ") {
					t.Errorf("got panic %q, want one starting with fsm:", msg)
				}
			}()
			m.In(states...)
		})
	}
}

// The machine records the initial state and its status when it first sees
// an object of its kinds, and forgets the object when it is deleted.
func TestFirstSightAndDelete(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		key  opbus.Key
		want opbus.Status
	}{
		{"an object of the machine's kind", podKey, opbus.Waiting("waiting for containers")},
		{"an object of another kind", opbus.Key{Kind: "Service", Name: "web"}, opbus.Status{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPodBus(t, nil)
			if err := p.bus.Dispatch(ctx, tt.key, pod("web", "waiting", 0)); err != nil {
				t.Fatal(err)
			}
			_, slots, err := p.bus.Status(ctx, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if got := slots["lifecycle"]; got != tt.want {
				t.Errorf("got slot %v on first sight, want %v", got, tt.want)
			}
			if tt.key != podKey {
				return
			}
			p.step(t, podStep{"running", 0, "running", opbus.Active("running")})
			if err := p.bus.DispatchDelete(ctx, podKey, nil); err != nil {
				t.Fatal(err)
			}
			// Created again, the object starts from the initial state.
			p.step(t, podStep{"waiting", 0, "pending", opbus.Waiting("waiting for containers")})
		})
	}
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(bus *opbus.Bus, m *fsm.Machine) error
		want    string
	}{
		{"twice", func(bus *opbus.Bus, m *fsm.Machine) error {
			return m.Register(bus)
		}, "already registered"},
		{"a slot with the machine's name is taken", func(bus *opbus.Bus, m *fsm.Machine) error {
			return bus.AddSlot("lifecycle")
		}, `slot "lifecycle": duplicate ID`},
		{"the bus has started", func(bus *opbus.Bus, m *fsm.Machine) error {
			return bus.Dispatch(context.Background(), podKey, pod("web", "waiting", 0))
		}, "the bus has started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus, err := opbus.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := fsm.New(podSpec())
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.prepare(bus, m); err != nil {
				t.Fatal(err)
			}
			err = m.Register(bus)
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			checkErr(t, errors.Join(err, errMarker), errMarker, `machine "lifecycle"`, tt.want)
		})
	}
	t.Run("nil bus", func(t *testing.T) {
		m, err := fsm.New(podSpec())
		if err != nil {
			t.Fatal(err)
		}
		checkErr(t, errors.Join(m.Register(nil), errMarker), errMarker, "Register(nil)")
	})
}

// TestNewIncarnationStartsAtInitial: an object deleted (with a delete
// handler that failed once) and created again starts its machine from the
// initial state, not the old incarnation's.
func TestNewIncarnationStartsAtInitial(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, jobSpec(), nil)
	fails := 1
	err := h.bus.Handle("cleanup", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		if fails > 0 {
			fails--
			return opbus.Status{}, errors.New("cleanup failed")
		}
		return opbus.Status{}, nil
	}, opbus.On{Types: []opbus.EventType{opbus.Delete}})
	if err != nil {
		t.Fatal(err)
	}
	h.mustFire("submit", "start")
	if got := h.state(); got != "running" {
		t.Fatalf("got state %q, want running", got)
	}
	if err := h.bus.DispatchDelete(ctx, h.key, nil); err == nil {
		t.Fatal("the failing delete handler's error was not returned")
	}
	if got := h.state(); got != "idle" {
		t.Fatalf("got state %q in the new incarnation, want idle", got)
	}
}
