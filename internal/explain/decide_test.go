package explain

import (
	"strings"
	"testing"
	"time"
)

// TestDecideOrder: the first reason that applies is the answer, in the
// order of rule 42 of docs/semantics.md; each case would get another
// reason if the one before it were skipped.
func TestDecideOrder(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	live := Facts{ID: "h", Registered: true, KindOK: true, Live: true, RunsHere: true}
	with := func(f func(*Facts)) *Facts { c := live; f(&c); return &c }
	queued := &Object{Now: now, Queue: Queue{Queued: 1}}
	idle := &Object{Now: now}
	for _, tc := range []struct {
		name string
		o    *Object
		f    *Facts
		want Reason
		in   string // in the detail
	}{
		{"collector", idle, &Facts{ID: "c", Collector: true}, Collector, "every commit"},
		{"kind before failure", idle, with(func(f *Facts) { f.KindOK, f.Kinds, f.Fail = false, []string{"Pod"}, &Failure{N: 1} }), FilteredByKind, "[Pod]"},
		{"type on a live object", idle, with(func(f *Facts) { f.Live, f.Types = false, []string{"delete"} }), FilteredByType, "[delete]"},
		{"failure before handled", queued, with(func(f *Facts) {
			f.Current, f.Stored, f.Fail = "x", "y", &Failure{On: "x", N: 3, At: now.Add(time.Minute)}
		}), Failed, "attempt 3); next retry at 2026-03-01T12:01:00Z (in 1m0s)"},
		{"stale failure", idle, with(func(f *Facts) { f.Current, f.Stored, f.Fail = "x", "x", &Failure{On: "old", N: 3} }), Handled, "last handled"},
		{"permanent", idle, with(func(f *Facts) { f.Current, f.Fail = "x", &Failure{On: "x", N: 1, Permanent: true} }), FailedPermanently, "for good"},
		{"failure from a record", idle, &Facts{ID: "h", Fail: &Failure{On: "v", N: 2}}, Failed, "digest v (attempt 2); retried at the object's next pass"},
		{"scheduled", idle, with(func(f *Facts) {
			f.Current, f.Stored, f.Timer = "x", "x", &Timer{Next: now.Add(-time.Second), Every: time.Minute}
		}), Scheduled, "ago: at the next pass"},
		{"created already", queued, with(func(f *Facts) { f.CreateOnly, f.Current, f.Stored = true, "x", "y" }), FilteredByType, "[Create]"},
		{"unknown, never", idle, &Facts{ID: "h"}, NeverRan, "no value"},
		{"unknown, ran", idle, &Facts{ID: "h", Stored: "y"}, Ran, "cannot be told from the record"},
		{"coalesced", &Object{Queue: Queue{Queued: 1, Coalesced: true}}, with(func(f *Facts) { f.Current = "x" }), Coalesced, "coalesced"},
		{"held by a deletion", &Object{Queue: Queue{Blocked: true}}, with(func(f *Facts) { f.Current, f.HasWhen = "x", true }), Held, "unfinished deletion"},
		{"runs before when", idle, with(func(f *Facts) { f.Current, f.HasWhen, f.RunsHere = "x", true, false }), NotRunHere, "Options.Runs"},
		{"when", idle, with(func(f *Facts) { f.Current, f.Stored, f.HasWhen = "x", "y", true }), SkippedByWhen, "On.When"},
		{"never ran", idle, with(func(f *Facts) { f.Current = "x" }), NeverRan, "next pass"},
		{"changed", idle, with(func(f *Facts) { f.Current, f.Stored = "x", "y" }), Changed, "next pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Decide(tc.o, tc.f)
			if h.Reason != tc.want || !strings.Contains(h.Detail, tc.in) {
				t.Errorf("got %s (%s), want %s with %q", h.Reason, h.Detail, tc.want, tc.in)
			}
		})
	}
}

// TestReportString: the text names every part the report holds.
func TestReportString(t *testing.T) {
	r := &Report{
		Key: Key{Kind: "Pod", Name: "p"}, Source: "record", Incarnation: "u1", Ended: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		Queue:    Queue{Queued: 2, Running: true, Coalesced: true},
		Pending:  []Pending{{}, {Deleted: true}},
		Related:  []Related{{Key: "Deployment default/d"}},
		Values:   map[string]string{"phase": "up"},
		Handlers: []Handler{{ID: "h", Reason: Failed, Detail: "d", Error: "boom", Slot: &Status{Level: "error", Message: "boom"}, Good: &Status{Level: "active"}}},
		Notes:    []string{"n"},
	}
	want := `Pod p (from the record)
incarnation: u1
deletion finished: 2026-12-03T10:00:00Z (a tombstone)
queue: 2 queued, running, coalesced
h: failed
  d
  error: boom
  slot: error "boom"
  slot at its last success: active
pending: 2 saved state(s), 1 of them deletions
related: Deployment default/d
value phase: "up"
note: n
`
	if got := r.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
