package fsm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/opbus/opbus"
)

// Spec declares a machine: the lifecycle of one kind of object. It is plain
// data; [New] validates it and reports every mistake it finds.
type Spec struct {
	// Name names the machine. It is the ID of the machine's status slot,
	// and it prefixes the IDs of the handlers the machine registers
	// ("<Name>/state", "<Name>/<rule ID>") and the name of the value that
	// holds each object's state ("fsm/<Name>").
	Name string
	// Initial is the state of an object the machine has not seen before.
	Initial string
	// States declares every state, in the order diagrams list them.
	States []State
	// Triggers declares the events that move an object between states.
	Triggers []Trigger
	// Kinds limits the machine's handlers (its state bookkeeping and its
	// rules) to objects of these kinds; empty means every kind.
	Kinds []string
}

// State declares one state of a machine.
type State struct {
	// Name names the state; it is what the store holds for an object in
	// this state.
	Name string
	// Status is what the machine's slot shows while an object is in this
	// state, and so feeds the object's overall status. The zero Status
	// means no opinion: the slot is cleared.
	Status opbus.Status
	// Enter, if set, runs after each transition into this state from
	// another state, once the new state is recorded. A non-empty event it
	// returns is fired next, in the same call to [Machine.Fire]: that is
	// how transitions are chained.
	Enter Action
	// Retired marks a state that no trigger enters any more but that
	// stored records may still hold, so that they can be read and left
	// through its triggers. A retired state is exempt from the
	// reachability check and must not be a destination.
	Retired bool
}

// Trigger declares an event: the states it can fire from and the state it
// leads to. A trigger whose destination is one of its sources makes a
// self-transition from that source, which is a result, not an error.
type Trigger struct {
	// Name names the event, as given to [Machine.Fire].
	Name string
	// Src lists the states the event can fire from.
	Src []string
	// Dst is the state the event leads to.
	Dst string
	// Guard, if set, decides whether the event may fire.
	Guard Guard
}

// Transition describes one step of a machine: the event that fired and the
// states before and after it. For a self-transition From equals To.
type Transition struct {
	Event, From, To string
}

// Guard decides whether an event may fire, before anything changes: a nil
// error allows it, any other error refuses it and is the reason reported
// (wrapped, so errors.Is and errors.As see it). t.To is the state the event
// would lead to. ev is the event being handled; a guard must not call
// [Machine.Fire] for the same object (it gets [ErrInTransition]).
type Guard func(ctx context.Context, ev *opbus.Event, t Transition) error

// Action runs when an object has entered a state (see [State.Enter]). A
// non-empty next event is fired next; an error ends the chain and is
// returned by [Machine.Fire], the transitions made so far standing.
type Action func(ctx context.Context, ev *opbus.Event, t Transition) (next string, err error)

// validate reports every problem of s, joined, each naming the offending
// item.
func (s *Spec) validate() error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("fsm: machine %q: "+format, append([]any{s.Name}, args...)...))
	}
	if err := checkName(s.Name); err != nil {
		fail("machine name: %v", err)
	}

	states := map[string]*State{}
	for i := range s.States {
		st := &s.States[i]
		if err := checkName(st.Name); err != nil {
			fail("state #%d: %v", i+1, err)
			continue
		}
		if _, dup := states[st.Name]; dup {
			fail("state %q declared twice", st.Name)
			continue
		}
		states[st.Name] = st
	}
	if len(s.States) == 0 {
		fail("no states declared")
	}
	switch init, ok := states[s.Initial]; {
	case s.Initial == "":
		fail("no initial state")
	case !ok:
		fail("initial state %q is not a declared state (declared: %s)", s.Initial, list(stateNames(s.States)))
	case init.Retired:
		fail("initial state %q is retired", s.Initial)
	}

	triggers := map[string]bool{}
	for i, t := range s.Triggers {
		if err := checkName(t.Name); err != nil {
			fail("trigger #%d: %v", i+1, err)
			continue
		}
		if triggers[t.Name] {
			fail("trigger %q declared twice: give each event one declaration, listing all its sources", t.Name)
			continue
		}
		triggers[t.Name] = true
		if len(t.Src) == 0 {
			fail("trigger %q: no source states: it could never fire", t.Name)
		}
		for j, src := range t.Src {
			if _, ok := states[src]; !ok {
				fail("trigger %q: source %q is not a declared state", t.Name, src)
			} else if slices.Contains(t.Src[:j], src) {
				fail("trigger %q: source %q listed twice", t.Name, src)
			}
		}
		switch dst, ok := states[t.Dst]; {
		case t.Dst == "":
			fail("trigger %q: no destination state", t.Name)
		case !ok:
			fail("trigger %q: destination %q is not a declared state", t.Name, t.Dst)
		case dst.Retired:
			fail("trigger %q: destination %q is retired: no trigger may enter a retired state", t.Name, t.Dst)
		}
	}

	for i, k := range s.Kinds {
		if k == "" {
			fail("kind #%d is empty: it would match no object", i+1)
		}
	}

	if len(errs) == 0 {
		if lost := s.unreachable(); len(lost) > 0 {
			fail("states %s cannot be reached from the initial state %q: add a trigger into them, or mark them Retired if only stored records hold them", list(lost), s.Initial)
		}
	}
	return errors.Join(errs...)
}

// unreachable returns the states, other than retired ones, that no sequence
// of triggers leads to from the initial state, in declaration order.
func (s *Spec) unreachable() []string {
	seen := map[string]bool{s.Initial: true}
	for queue := []string{s.Initial}; len(queue) > 0; queue = queue[1:] {
		for _, t := range s.Triggers {
			if !seen[t.Dst] && slices.Contains(t.Src, queue[0]) {
				seen[t.Dst] = true
				queue = append(queue, t.Dst)
			}
		}
	}
	var lost []string
	for _, st := range s.States {
		if !seen[st.Name] && !st.Retired {
			lost = append(lost, st.Name)
		}
	}
	return lost
}

// checkName reports a name that cannot name a machine, state, event or
// rule: names show up in slot IDs, handler IDs, stored records, error
// messages and diagrams, so they are letters, digits, '-', '_' and '.'.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' && r != '.' {
			return fmt.Errorf("name %q: %q is not allowed: use letters, digits, '-', '_' and '.'", name, r)
		}
	}
	return nil
}

func stateNames(states []State) []string {
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = st.Name
	}
	return names
}

// list formats names for a message: "a, b, c", or "none".
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// clone returns a copy of s that shares no slice with it.
func (s Spec) clone() Spec {
	s.States = slices.Clone(s.States)
	s.Triggers = slices.Clone(s.Triggers)
	for i := range s.Triggers {
		s.Triggers[i].Src = slices.Clone(s.Triggers[i].Src)
	}
	s.Kinds = slices.Clone(s.Kinds)
	return s
}
