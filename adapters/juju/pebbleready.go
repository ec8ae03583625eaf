package juju

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/opbus/opbus"
)

// Juju runs <container>-pebble-ready each time it finds the container's
// Pebble with a boot ID other than the one it last saw: when the
// container has started, or started again, and when the unit's agent has
// restarted. A restarted container has none of the layers, services and
// pushed files the charm gave the last one, though can_connect was true
// before and is true again. So pebble-ready is a change for every handler
// subscribed to the container, whatever the value of its fields: their
// digests are forgotten as the records are read, and they run, as for a
// new object (opbus.Create), so that they make the container what it
// should be again. Their slots, failures and values are kept.

// readyHandlers returns the IDs of the handlers subscribed to the
// container name: to a field under containers.<name>, to containers or
// containers[*], or to the whole document.
func readyHandlers(subs []opbus.Subscription, name string) map[string]bool {
	ids := map[string]bool{}
	for _, s := range subs {
		if len(s.Fields) == 0 {
			ids[s.ID] = true
		}
		for _, f := range s.Fields {
			switch {
			case len(f) == 0 || f[0].Kind != opbus.SegKey:
				ids[s.ID] = true // a wildcard at the top covers containers
			case f[0].Key != "containers":
			case len(f) == 1 || f[1].Kind != opbus.SegKey || f[1].Key == name:
				ids[s.ID] = true
			}
		}
	}
	return ids
}

// forgetDigests deletes the digests of the handlers ids from the records
// read from the unit's state and reports whether it deleted any. A
// record it cannot read as a JSON object is left for the bus to report.
func forgetDigests(records map[string]json.RawMessage, ids map[string]bool) bool {
	changed := false
	for _, key := range slices.Sorted(maps.Keys(records)) {
		var rec map[string]json.RawMessage
		var err error
		if len(ids) == 0 || json.Unmarshal(records[key], &rec) != nil || rec == nil {
			continue
		}
		var digests map[string]json.RawMessage
		if json.Unmarshal(rec["digests"], &digests) != nil || digests == nil {
			continue
		}
		n := len(digests)
		maps.DeleteFunc(digests, func(id string, _ json.RawMessage) bool { return ids[id] })
		if len(digests) == n {
			continue
		}
		if len(digests) == 0 {
			delete(rec, "digests")
		} else if rec["digests"], err = json.Marshal(digests); err != nil {
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
