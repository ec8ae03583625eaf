package juju

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/opbus/opbus"
)

// upgrade is what upgrade-charm does to the records it reads. Juju fires
// upgrade-charm (and config-changed after it) so that the new code
// re-evaluates what the old code decided; so every handler runs again
// once, its digest forgotten, and the status slot of a handler the new
// code no longer registers is dropped with its digest and failure, so that
// its status does not stay on the unit. Slots no handler ever owned (of
// collectors and [opbus.Bus.AddSlot]) and values set with
// [opbus.Event.SetValue] are kept.
//
// A unit or application whose slots the upgrade dropped has its status set
// again from the slots that remain, active with no message when none does
// (see [run.publish]).
type upgrade struct {
	handlers map[string]bool // the handlers the new code registers
	// cleared lists the records (by the String of their key) some of
	// whose slots were dropped.
	cleared map[string]bool
}

// newUpgrade returns the upgrade for the registered handlers subs.
func newUpgrade(subs []opbus.Subscription) *upgrade {
	u := &upgrade{handlers: map[string]bool{}, cleared: map[string]bool{}}
	for _, s := range subs {
		u.handlers[s.ID] = true
	}
	return u
}

// apply rewrites the records read from the unit's state and reports
// whether any changed. A record it cannot read as a JSON object is left
// for the bus to report.
func (u *upgrade) apply(records map[string]json.RawMessage) bool {
	changed := false
	for _, key := range slices.Sorted(maps.Keys(records)) {
		var rec map[string]json.RawMessage
		if json.Unmarshal(records[key], &rec) != nil || rec == nil {
			continue
		}
		removed := map[string]bool{}
		for _, field := range []string{"digests", "fails", "good", "olds", "timers"} { // handlers' alone
			var ids map[string]json.RawMessage
			_ = json.Unmarshal(rec[field], &ids)
			for id := range ids {
				if !u.handlers[id] {
					removed[id] = true
				}
			}
		}
		edited := false
		if _, ok := rec["digests"]; ok {
			delete(rec, "digests")
			edited = true
		}
		for _, field := range []string{"fails", "slots", "good", "olds", "timers"} {
			if drop(rec, field, removed) {
				edited = true
				if field == "slots" {
					u.cleared[key] = true
				}
			}
		}
		if !edited {
			continue
		}
		data, err := json.Marshal(rec)
		if err != nil {
			continue
		}
		records[key] = data
		changed = true
	}
	return changed
}

// drop deletes the entries of removed from the JSON object rec[field],
// and the field when it becomes empty, and reports whether it deleted any.
func drop(rec map[string]json.RawMessage, field string, removed map[string]bool) bool {
	var m map[string]json.RawMessage
	if len(removed) == 0 || json.Unmarshal(rec[field], &m) != nil || m == nil {
		return false
	}
	n := len(m)
	for id := range removed {
		delete(m, id)
	}
	if len(m) == n {
		return false
	}
	if len(m) == 0 {
		delete(rec, field)
		return true
	}
	data, err := json.Marshal(m)
	if err != nil {
		return false
	}
	rec[field] = data
	return true
}
