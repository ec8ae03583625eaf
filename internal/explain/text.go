package explain

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// String renders the report for a person: the object, then one block per
// handler, then what the object holds besides.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (from the %s", r.Key, r.Source)
	if !r.At.IsZero() {
		fmt.Fprintf(&b, ", at %s", r.At.UTC().Format(time.RFC3339))
	}
	b.WriteString(")\n")
	if r.Status != nil {
		fmt.Fprintf(&b, "status: %s\n", r.Status)
	}
	if r.Incarnation != "" {
		fmt.Fprintf(&b, "incarnation: %s\n", r.Incarnation)
	}
	if !r.Ended.IsZero() {
		fmt.Fprintf(&b, "deletion finished: %s (a tombstone)\n", r.Ended.UTC().Format(time.RFC3339))
	}
	switch {
	case r.Deleted:
		b.WriteString("observed: deleted\n")
	case !r.Observed && r.Source != "record": // a record never holds it
		b.WriteString("observed: no current state known\n")
	}
	if q := r.Queue; q != (Queue{}) {
		fmt.Fprintf(&b, "queue: %d queued", q.Queued)
		for _, f := range []struct {
			on   bool
			word string
		}{{q.Running, "running"}, {q.Blocked, "blocked"}, {q.Coalesced, "coalesced"}} {
			if f.on {
				b.WriteString(", " + f.word)
			}
		}
		b.WriteString("\n")
	}
	for _, h := range r.Handlers {
		h.write(&b)
	}
	r.writeRest(&b)
	return b.String()
}

func (h *Handler) write(b *strings.Builder) {
	fmt.Fprintf(b, "%s: %s\n  %s\n", h.ID, h.Reason, h.Detail)
	if h.Error != "" {
		fmt.Fprintf(b, "  error: %s\n", h.Error)
	}
	if h.Slot != nil {
		fmt.Fprintf(b, "  slot: %s\n", h.Slot)
	}
	if h.Good != nil {
		fmt.Fprintf(b, "  slot at its last success: %s\n", h.Good)
	}
}

func (r *Report) writeRest(b *strings.Builder) {
	if n := len(r.Pending); n > 0 {
		deleted := 0
		for _, p := range r.Pending {
			if p.Deleted {
				deleted++
			}
		}
		fmt.Fprintf(b, "pending: %d saved state(s), %d of them deletions\n", n, deleted)
	}
	for _, rel := range r.Related {
		fmt.Fprintf(b, "related: %s\n", rel.Key)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Values)) {
		fmt.Fprintf(b, "value %s: %q\n", name, r.Values[name])
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
}

// String renders the key as the bus's Key does: "Kind namespace/name", or
// "Kind name" without a namespace.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// String renders the status as its level and quoted message.
func (s *Status) String() string {
	out := s.Level
	if s.Message != "" {
		out += fmt.Sprintf(" %q", s.Message)
	}
	if s.Reason != "" {
		out += " (reason " + s.Reason + ")"
	}
	return out
}

// AddRelated adds related objects, keeping them sorted by key.
func (r *Report) AddRelated(rel ...Related) {
	r.Related = append(r.Related, rel...)
	slices.SortFunc(r.Related, func(x, y Related) int { return strings.Compare(x.Key, y.Key) })
}

// JSON renders the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	return json.MarshalIndent(r, "", "  ")
}
