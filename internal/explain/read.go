package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/opbus/opbus/internal/record"
)

// Read explains the stored record data of key as of now (see FromWire),
// with the overall status folded from its slots as the bus folds them.
// A record that cannot be parsed is an error naming key.
func Read(key Key, data []byte, now time.Time) (*Report, error) {
	w, err := record.Parse[map[string]Status](data)
	if err != nil {
		return nil, fmt.Errorf("the record of %v: %v", key, err)
	}
	r := FromWire(key, w, now)
	if len(w.Slots) > 0 {
		s := Summary(w.Slots)
		r.Status = &s
	}
	return r, nil
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
