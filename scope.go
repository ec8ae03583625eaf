package opbus

import (
	"maps"
	"slices"
)

// Slots holds the statuses of one object, one slot per handler or collector,
// named by its ID. A slot holding the zero Status is absent: [Slots.Set]
// with the zero Status clears it. Slots encode to JSON as an object keyed by
// slot name, which encoding/json writes in name order.
type Slots map[string]Status

// Set puts s in the slot named id; the zero Status clears the slot.
func (m Slots) Set(id string, s Status) {
	if s.IsZero() {
		delete(m, id)
		return
	}
	m[id] = s
}

// get returns the status in the slot named id, and whether there is one.
func (m Slots) get(id string) (Status, bool) {
	s, ok := m[id]
	return s, ok
}

// Names returns the names of the slots that hold a status, sorted.
func (m Slots) Names() []string {
	return slices.Sorted(maps.Keys(m))
}

// Summary folds the slots into one overall Status: the highest level
// present (error > blocked > maintenance > waiting > active > unknown)
// wins, and its message joins the non-empty messages of every slot at that
// level, in slot-name order, with "; "; its reason is the first reason
// among those slots, in slot-name order ("" if none has one). No slots, or
// only zero statuses, give the zero Status.
func (m Slots) Summary() Status { return summarize(m) }

// clone returns a copy of m (nil for nil).
func (m Slots) clone() Slots { return maps.Clone(m) }

// equal reports whether m and o hold the same statuses.
func (m Slots) equal(o Slots) bool { return maps.Equal(m, o) }
