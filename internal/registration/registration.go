// Package registration checks and keeps the part of what is registered on a
// bus that is plain values: the slot IDs, each taken once by a handler, a
// collector or a slot (only a slot's is set by SetSlot), and the parts of a handler's subscription that need
// none of the bus's types (its event types and kinds, and the options that
// need fields). Its errors name the registration and the bad input, as the
// bus's doors do; the bus checks paths itself, and internal/timegrid
// periods.
package registration

import (
	"fmt"
	"maps"
	"slices"
)

// Names maps each slot ID taken to what took it: "handler", "collector"
// or "slot".
type Names map[string]string

// Claim takes id for a what: an empty ID, the reserved one (the bus's own
// slot), one taken already, or any once registration is over (frozen) is
// an error, and nothing is taken.
func (n Names) Claim(id, what, reserved string, frozen bool) error {
	switch {
	case id == "":
		return fmt.Errorf("opbus: %s: empty ID: every %s needs a name for its slot", what, what)
	case id == reserved:
		return fmt.Errorf("opbus: %s %q: the name is the bus's own slot (for records it cannot read); choose another", what, id)
	case frozen:
		return fmt.Errorf("opbus: %s %q: the bus has started; register before Run, Observe or Dispatch", what, id)
	}
	if owner, dup := n[id]; dup {
		return fmt.Errorf("opbus: %s %q: duplicate ID: the slot %q is taken by a %s", what, id, id, owner)
	}
	n[id] = what
	return nil
}

// Settable reports why SetSlot cannot set the slot id: no slot is
// registered under id, or what took it (a handler, a collector) sets it
// by what it returns.
func (n Names) Settable(id string) error {
	switch owner := n[id]; owner {
	case "slot":
		return nil
	case "":
		return fmt.Errorf("opbus: SetSlot(%q): no such slot is registered: call Bus.AddSlot(%q) before Run (fsm.Machine.Register does it for a state machine)", id, id)
	default:
		return fmt.Errorf("opbus: SetSlot(%q): the slot is a %s's own, set by what it returns", id, owner)
	}
}

// IDs returns the IDs taken, sorted.
func (n Names) IDs() []string { return slices.Sorted(maps.Keys(n)) }

// Types returns the event types of handler id as a bit per type (1<<t),
// or an error naming a type outside first..last (whose names are given,
// in order, for the message). No types means deflt.
func Types[E ~int](id string, types []E, first, last E, names string, deflt ...E) (uint8, error) {
	if len(types) == 0 {
		types = deflt
	}
	var mask uint8
	for _, t := range types {
		if t < first || t > last {
			return 0, fmt.Errorf("opbus: handler %q: unknown event type %d: expected %s", id, int(t), names)
		}
		mask |= 1 << t
	}
	return mask, nil
}

// Plain is the part of a handler's subscription that is plain values.
type Plain struct {
	Kinds      []string // the kinds it runs on; empty: any
	Fields     []string // the fields it subscribes to; empty: the whole object
	KeepOld    bool     // it keeps the handled value of its fields
	DeleteOnly bool     // its only event type is Delete
}

// Check reports the first part of p that cannot work for handler id.
func (p Plain) Check(id string) error {
	if p.KeepOld && len(p.Fields) == 0 {
		return fmt.Errorf("opbus: handler %q: KeepOld needs Fields: it keeps the handled value of those fields, not whole objects", id)
	}
	if len(p.Fields) > 0 && p.DeleteOnly {
		return fmt.Errorf("opbus: handler %q: fields %v can never change on Delete: a delete handler sees the last state whole", id, p.Fields)
	}
	if slices.Contains(p.Kinds, "") {
		return fmt.Errorf("opbus: handler %q: empty kind in Kinds: it would match nothing", id)
	}
	return nil
}
