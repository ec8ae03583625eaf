package fsm

import (
	"context"
	"fmt"
	"slices"
	"sync"

	lfsm "github.com/looplab/fsm"

	"github.com/opbus/opbus"
)

// ValuePrefix prefixes the name of the value in which a machine keeps each
// object's state: machine "pod" keeps it in "fsm/pod" (see
// [opbus.Event.Value]).
const ValuePrefix = "fsm/"

// uidField is what the machine's state handler subscribes to. The handler
// must run when an object is first seen (Create), when the program starts
// again (Resume) and when the object goes (Delete), never merely because
// the object changed: metadata.uid never changes during an object's life,
// and where objects have no uid its absence never changes either, so the
// bus skips the handler on updates without even digesting its field.
const uidField = "metadata.uid"

// stateHandler names the machine's state handler, after the machine's name
// and a slash, like the handlers of rules.
const stateHandler = "state"

// Machine is a validated [Spec] that keeps one state per object. It is safe
// for concurrent use by the handlers of different objects; for one object,
// the bus runs handlers one at a time, and those are the only places to
// call [Machine.Fire] from.
type Machine struct {
	spec    Spec
	value   string                // the name of the persisted value
	states  map[string]*stateInfo // by name
	trigs   map[string]*Trigger   // by event name
	events  []lfsm.EventDesc      // looplab's copy of the triggers
	declEvs string                // every event name, sorted, for messages
	guarded bool                  // some trigger has a guard

	mu    sync.Mutex // guards bus and rules
	bus   *opbus.Bus
	rules []Rule

	// byName and others hold each object's instance: byName the
	// first object seen with its name, others the objects whose name
	// another object held when they were first seen. Hashing a name alone
	// halves the lookup that every Fire makes (a sync.Map hashes an
	// opbus.Key's three strings through its interface); an object whose
	// name is taken costs a second lookup. Sync.Maps, not maps under a lock:
	// they are read at every Fire and written once per object, and their
	// reads take no lock (the lock's atomic counters were a tenth of a
	// transition's time in fsm BenchmarkTransition's profile).
	byName sync.Map // string → *instance
	others sync.Map // opbus.Key → *instance

	runners sync.Pool // *runner
}

type stateInfo struct {
	State
	out     []edge   // the transitions from this state, in declaration order
	allowed []string // their events, sorted
}

// edge is a transition from a state: its trigger and where it leads.
type edge struct {
	trig *Trigger
	dst  *stateInfo
}

// edge returns the transition by event from st, or nil. A state has few
// transitions: scanning them is cheaper than hashing.
func (st *stateInfo) edge(event string) *edge {
	for i := range st.out {
		if st.out[i].trig.Name == event {
			return &st.out[i]
		}
	}
	return nil
}

// New validates spec and returns its machine. Every problem is reported,
// each naming the offending item: an empty or malformed name, a state or
// event declared twice, an initial state, source or destination that is
// not a declared state, a trigger without sources, and a state that cannot
// be reached from the initial state (an error, since it is nearly always a
// misspelt source or destination; mark a state kept only for old records
// [State.Retired]). New keeps a copy of spec.
func New(spec Spec) (*Machine, error) {
	spec = spec.clone()
	if err := spec.validate(); err != nil {
		return nil, err
	}
	m := &Machine{
		spec:   spec,
		value:  ValuePrefix + spec.Name,
		states: make(map[string]*stateInfo, len(spec.States)),
		trigs:  make(map[string]*Trigger, len(spec.Triggers)),
	}
	for _, st := range spec.States {
		m.states[st.Name] = &stateInfo{State: st}
	}
	var names []string
	for i, t := range m.spec.Triggers {
		m.trigs[t.Name] = &m.spec.Triggers[i]
		m.guarded = m.guarded || t.Guard != nil
		m.events = append(m.events, lfsm.EventDesc{Name: t.Name, Src: t.Src, Dst: t.Dst})
		names = append(names, t.Name)
		for _, src := range t.Src {
			st := m.states[src]
			st.out = append(st.out, edge{trig: &m.spec.Triggers[i], dst: m.states[t.Dst]})
			st.allowed = append(st.allowed, t.Name)
		}
	}
	for _, st := range m.states {
		slices.Sort(st.allowed)
	}
	slices.Sort(names)
	m.declEvs = list(names)
	return m, nil
}

// Name returns the machine's name, which is also the ID of its slot.
func (m *Machine) Name() string { return m.spec.Name }

// State returns the state of ev's object: the one stored in its record, or
// the initial state for an object the machine has not recorded yet. A
// stored state the machine does not declare is an error wrapping
// [ErrUnknownState] that names the object and the state.
func (m *Machine) State(ev *opbus.Event) (string, error) {
	if ev == nil {
		return "", fmt.Errorf("fsm: machine %q: State with a nil event", m.spec.Name)
	}
	state, _, err := m.current(ev.Key, ev)
	return state, err
}

// valuer reads persisted values: an [opbus.Event], or a map in tests.
type valuer interface {
	Value(name string) (string, bool)
}

// current returns the state stored in v for key, or the initial state, and
// whether one is stored.
func (m *Machine) current(key opbus.Key, v valuer) (state string, stored bool, err error) {
	s, ok := v.Value(m.value)
	if !ok {
		return m.spec.Initial, false, nil
	}
	if _, known := m.states[s]; !known {
		return s, true, m.errorf(ErrUnknownState, nil, key, "stored state %q is not a declared state (declared: %s)", s, list(stateNames(m.spec.States)))
	}
	return s, true, nil
}

// In returns a predicate, for [opbus.On].When, that reports whether the
// event's object is in one of states, so that a handler runs only in those
// states. A handler skipped by it commits nothing, so it runs once the
// object enters one of the states and its value still differs from the one
// it last handled: in the same dispatch if the transition is made by a
// handler registered before it, else at the object's next dispatch. An
// object whose stored state is unknown is in none of them.
//
// In panics if a state is not declared, as regexp.MustCompile does: it is
// called while handlers are registered, and a misspelt state must not make
// a handler that silently never runs.
func (m *Machine) In(states ...string) func(ev *opbus.Event) bool {
	if len(states) == 0 {
		panic(fmt.Sprintf("fsm: machine %q: In() needs at least one state", m.spec.Name))
	}
	for _, s := range states {
		if _, ok := m.states[s]; !ok {
			panic(fmt.Sprintf("fsm: machine %q: In(%q): not a declared state (declared: %s)", m.spec.Name, s, list(stateNames(m.spec.States))))
		}
	}
	states = slices.Clone(states)
	return func(ev *opbus.Event) bool {
		s, _, err := m.current(ev.Key, ev)
		return err == nil && slices.Contains(states, s)
	}
}

// Register registers the machine with bus: its slot (named after the
// machine), a handler "<name>/state" that records the initial state of each
// object when it is first seen, checks the stored state when the program
// starts again (an unknown one fails the handler permanently, naming the
// object and the state) and forgets the object when it is deleted, and a
// handler per rule (see [Machine.AddRule]). Register it before the handlers
// that use it, so that they see the state its rules set in the same
// dispatch. A machine is registered with one bus; to run another bus, as a
// second process does, make another machine from the same spec. An error
// may leave the bus with part of the machine registered.
func (m *Machine) Register(bus *opbus.Bus) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if bus == nil {
		return fmt.Errorf("fsm: machine %q: Register(nil)", m.spec.Name)
	}
	if m.bus != nil {
		return fmt.Errorf("fsm: machine %q: already registered with a bus: make another machine from the same spec", m.spec.Name)
	}
	if err := bus.AddSlot(m.spec.Name); err != nil {
		return fmt.Errorf("fsm: machine %q: %w", m.spec.Name, err)
	}
	on := opbus.On{
		Types:  []opbus.EventType{opbus.Create, opbus.Resume, opbus.Delete},
		Kinds:  m.spec.Kinds,
		Fields: []string{uidField},
	}
	if err := bus.Handle(m.spec.Name+"/"+stateHandler, m.track, on); err != nil {
		return fmt.Errorf("fsm: machine %q: %w", m.spec.Name, err)
	}
	for _, r := range m.rules {
		if err := m.handleRule(bus, r); err != nil {
			return err
		}
	}
	m.bus = bus
	return nil
}

// track is the machine's state handler: it creates an object's record of
// state on first sight, checks it on resume and forgets the object on
// delete.
func (m *Machine) track(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	if ev.Type == opbus.Delete {
		m.forget(ev.Key)
		return opbus.Status{}, nil
	}
	state, stored, err := m.current(ev.Key, ev)
	if err != nil {
		// Retrying cannot fix a record: it fails until the program
		// declares the state, and is checked again when it starts.
		return opbus.Status{}, opbus.Permanent(err)
	}
	if err := ev.SetSlot(m.spec.Name, m.states[state].Status); err != nil {
		return opbus.Status{}, err
	}
	if !stored {
		if err := ev.SetValue(m.value, state); err != nil {
			return opbus.Status{}, err
		}
	}
	return opbus.Status{}, nil
}

// instance returns the instance of key, making it on first use.
func (m *Machine) instance(key opbus.Key) *instance {
	if v, ok := m.byName.Load(key.Name); ok {
		if in := v.(*instance); in.key == key {
			return in
		}
		return m.other(key)
	}
	// The name is free, but key may have been given a machine while it
	// was not.
	if v, ok := m.others.Load(key); ok {
		return v.(*instance)
	}
	v, _ := m.byName.LoadOrStore(key.Name, &instance{key: key})
	if in := v.(*instance); in.key == key {
		return in
	}
	return m.other(key)
}

// other returns the instance of key, whose name another object holds.
func (m *Machine) other(key opbus.Key) *instance {
	if v, ok := m.others.Load(key); ok {
		return v.(*instance)
	}
	v, _ := m.others.LoadOrStore(key, &instance{key: key})
	return v.(*instance)
}

// forget drops the instance of key.
func (m *Machine) forget(key opbus.Key) {
	if v, ok := m.byName.Load(key.Name); ok && v.(*instance).key == key {
		m.byName.CompareAndDelete(key.Name, v)
	}
	m.others.Delete(key)
}
