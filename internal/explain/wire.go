package explain

import (
	"maps"
	"slices"
	"time"

	"github.com/opbus/opbus/internal/record"
)

// SlotOnly: from a record alone, a slot with no digest, failure or
// schedule: a collector's, a state machine's (Bus.AddSlot) or a
// handler's that has committed nothing; the record cannot tell which.
const SlotOnly Reason = "slot-only"

// RecordNote says what a report made from a record alone cannot tell.
const RecordNote = "made from the stored record alone: handlers' kinds, event types, On.When, Options.Runs and fields are not stored, " +
	"so whether a handled value is the current one, and filters, cannot be told, and a handler that has recorded nothing for the object is not listed; " +
	"a running bus's Bus.Explain can tell"

// FromWire explains the stored record w of key as of now, for the
// handlers it names: those with a digest, a failure, a schedule, a kept
// value or a slot, in ID order.
func FromWire(key Key, w *record.Wire[map[string]Status], now time.Time) *Report {
	r := &Report{Key: key, Source: "record", At: now.UTC(), Notes: []string{RecordNote}}
	o := &Object{Now: now}
	ids := map[string]bool{}
	for _, m := range []map[string]bool{keys(w.Digests), keys(w.Fails), keys(w.Timers), keys(w.Olds), keys(w.Slots), keys(w.Good)} {
		maps.Copy(ids, m)
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		f := Facts{ID: id, Stored: w.Digests[id], Slot: slot(w.Slots, id), Good: slot(w.Good, id)}
		if fl, ok := w.Fails[id]; ok {
			f.Fail = &Failure{On: fl.On, N: fl.N, Permanent: fl.Permanent}
			if fl.At != 0 {
				f.Fail.At = time.UnixMilli(fl.At)
			}
		}
		if t, ok := w.Timers[id]; ok {
			f.Timer = &Timer{Next: time.UnixMilli(t.At + t.Every), Every: time.Duration(t.Every) * time.Millisecond}
		}
		h := Decide(o, &f)
		if f.Stored == "" && f.Fail == nil && f.Timer == nil {
			h.Reason, h.Detail = SlotOnly, "a slot with no digest, failure or schedule: a collector's, a state machine's or a handler's that has committed nothing (the record cannot tell which)"
		}
		r.Handlers = append(r.Handlers, h)
	}
	r.Incarnation, r.Values = w.Inc, w.Values
	if w.Ended != 0 {
		r.Ended = time.UnixMilli(w.Ended)
	}
	for _, p := range w.Pending {
		r.Pending = append(r.Pending, Pending{Deleted: p.Deleted})
	}
	for k, d := range w.Related {
		r.AddRelated(Related{Key: k, Digest: d})
	}
	return r
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func slot(m map[string]Status, id string) *Status {
	if s, ok := m[id]; ok {
		return &s
	}
	return nil
}
