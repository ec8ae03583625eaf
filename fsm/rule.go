package fsm

import (
	"context"
	"fmt"
	"slices"

	"github.com/opbus/opbus"
)

// Rule declares "on a change of Field where When holds, fire Fire": a bus
// handler that fires an event from the object's own data.
//
// A rule fires its event only from the event's source states: in any other
// state the change is handled with nothing to do, which is what lets two
// rules watch the same field for different events (start from pending,
// recover from failed). A refusal by the event's guard, or an unknown
// stored state, fails the rule's handler, which the bus reports in the
// rule's slot and retries.
type Rule struct {
	// ID names the rule; its handler, and so its slot, is
	// "<machine>/<ID>".
	ID string
	// Field is the path pattern whose changes the rule watches, as in
	// [opbus.On].Fields.
	Field string
	// When, if set, must hold for the event to fire; it sees the event of
	// the change. Nil means every change.
	When func(ev *opbus.Event) bool
	// Fire is the event to fire.
	Fire string
}

// AddRule adds a rule to the machine. Rules added before [Machine.Register] are
// registered by it; a rule added afterwards is registered with the bus at
// once, which fails once the bus has started. An empty or malformed ID, an
// ID used twice, a bad field path or an undeclared event is an error
// naming it.
func (m *Machine) AddRule(r Rule) error {
	if err := checkName(r.ID); err != nil {
		return fmt.Errorf("fsm: machine %q: rule ID: %w", m.spec.Name, err)
	}
	if r.ID == stateHandler {
		return fmt.Errorf("fsm: machine %q: rule ID %q is the machine's own handler: choose another", m.spec.Name, r.ID)
	}
	if _, err := opbus.ParsePath(r.Field); err != nil {
		return fmt.Errorf("fsm: machine %q: rule %q: %w", m.spec.Name, r.ID, err)
	}
	if _, ok := m.trigs[r.Fire]; !ok {
		return fmt.Errorf("fsm: machine %q: rule %q: event %q is not declared (declared: %s)", m.spec.Name, r.ID, r.Fire, m.declEvs)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.ContainsFunc(m.rules, func(o Rule) bool { return o.ID == r.ID }) {
		return fmt.Errorf("fsm: machine %q: rule %q declared twice", m.spec.Name, r.ID)
	}
	if m.bus != nil {
		if err := m.handleRule(m.bus, r); err != nil {
			return err
		}
	}
	m.rules = append(m.rules, r)
	return nil
}

// handleRule registers the handler of r with bus.
func (m *Machine) handleRule(bus *opbus.Bus, r Rule) error {
	src := m.trigs[r.Fire].Src
	fn := func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		if r.When != nil && !r.When(ev) {
			return opbus.Status{}, nil
		}
		state, _, err := m.current(ev.Key, ev)
		if err != nil {
			return opbus.Status{}, opbus.Permanent(err)
		}
		if !slices.Contains(src, state) {
			return opbus.Status{}, nil
		}
		_, err = m.Fire(ctx, ev, r.Fire)
		return opbus.Status{}, err
	}
	on := opbus.On{Kinds: m.spec.Kinds, Fields: []string{r.Field}}
	if err := bus.Handle(m.spec.Name+"/"+r.ID, fn, on); err != nil {
		return fmt.Errorf("fsm: machine %q: rule %q: %w", m.spec.Name, r.ID, err)
	}
	return nil
}
