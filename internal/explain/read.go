package explain

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opbus/opbus/internal/record"
)

// Read explains the stored record data of key as of now (see FromWire),
// with the overall status folded from its slots as the bus folds them. It
// reads the record as strictly as the bus does (internal/record's Decode):
// a record the bus would report as corrupt is an error naming key, never
// a plausible report. A version 1 record is explained by its slots: the
// bus drops its digests.
func Read(key Key, data []byte, now time.Time) (*Report, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("the record of %v: not a record: expected a JSON object: %v", key, err)
	}
	if _, err := record.Decode[[16]byte](data, nil, &strict); err != nil {
		return nil, fmt.Errorf("the record of %v is corrupt (the bus reports it and does not use it): %v", key, err)
	}
	var w *record.Wire[map[string]Status]
	if string(probe["v"]) == "1" {
		w = &record.Wire[map[string]Status]{Version: 1}
		var v1 struct {
			Slots, Good map[string]Status
			Values      map[string]string
		}
		_ = json.Unmarshal(data, &v1) // Decode has read it
		w.Slots, w.Good, w.Values = v1.Slots, v1.Good, v1.Values
	} else {
		var err error
		if w, err = record.Parse[map[string]Status](data); err != nil {
			return nil, fmt.Errorf("the record of %v: %v", key, err)
		}
	}
	r := FromWire(key, w, now)
	if w.Version == 1 {
		r.Notes = append(r.Notes, "a version 1 record: its digests are of an older encoding, which the bus drops, so every handler runs once more at the object's next pass")
	}
	if len(w.Slots) > 0 {
		s := Summary(w.Slots)
		r.Status = &s
	}
	return r, nil
}

// strict is what Read checks a record with, beside its form: slots the
// bus reads (a known level, not empty), and timers and snapshots as the
// bus reads them.
var strict = record.Codec[map[string]Status, struct{}]{
	CheckSlots: func(slots map[string]Status) error {
		for _, id := range slices.Sorted(maps.Keys(slots)) {
			switch s := slots[id]; {
			case s == Status{}:
				return fmt.Errorf("slot %q: empty status", id)
			case !slices.Contains(levels, s.Level):
				return fmt.Errorf("slot %q: unknown status level %q: expected one of %s", id, s.Level, strings.Join(levels, ", "))
			}
		}
		return nil
	},
	NewTimer:    func(string, int64, time.Duration) struct{} { return struct{}{} },
	ValidNumber: func(n json.Number) bool { _, err := strconv.ParseFloat(string(n), 64); return err == nil },
}

// levels are the stored level words, lowest first: the order in which
// the bus folds slots (Unknown < Active < Waiting < Maintenance < Blocked
// < Error).
var levels = []string{"unknown", "active", "waiting", "maintenance", "blocked", "error"}

// Summary folds stored slots into the overall status as the bus's
// Slots.Summary does: the highest level; the messages of the slots at it,
// in slot-name order, joined with "; "; the first of their reasons. The
// root's TestExplainSummaryMatchesSlots holds it to that.
func Summary(slots map[string]Status) Status {
	top, names := -1, []string(nil)
	for name, s := range slots {
		switch l := slices.Index(levels, s.Level); {
		case l > top:
			top, names = l, append(names[:0], name)
		case l == top:
			names = append(names, name)
		}
	}
	if names == nil {
		return Status{}
	}
	slices.Sort(names)
	out := Status{Level: slots[names[0]].Level}
	var msgs []string
	for _, n := range names {
		if m := slots[n].Message; m != "" {
			msgs = append(msgs, m)
		}
		if out.Reason == "" {
			out.Reason = slots[n].Reason
		}
	}
	out.Message = strings.Join(msgs, "; ")
	return out
}
