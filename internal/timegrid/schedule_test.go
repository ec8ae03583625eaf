package timegrid

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScheduleList checks that Put keeps the list in ID order and
// replaces a handler's schedule, and that Find and Drop find and remove
// it by ID.
func TestScheduleList(t *testing.T) {
	var l []*Schedule
	for _, id := range []string{"c", "a", "b", "a"} {
		l = Put(l, &Schedule{ID: id, Every: time.Duration(len(l)+1) * time.Second})
	}
	var ids []string
	for _, s := range l {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("ids = %v, want [a b c]", ids)
	}
	if s := Find(l, "a"); s == nil || s.Every != 4*time.Second {
		t.Fatalf("Find(a) = %+v, want the second Put of a", s)
	}
	if Find(l, "z") != nil {
		t.Fatal("Find(z) found a schedule")
	}
	l = Drop(l, "b")
	if len(l) != 2 || Find(l, "b") != nil || Find(l, "c") == nil {
		t.Fatalf("after Drop(b): %v", l)
	}
}

// TestScheduleRunAndRetry checks a schedule's due times through a run, a
// failed due run and a restart: each stays on the grid of its anchor.
func TestScheduleRunAndRetry(t *testing.T) {
	const sec = int64(time.Second)
	s := &Schedule{ID: "h", Anchor: 10 * sec, Every: 3 * time.Second}
	if got := s.Next().UnixNano(); got != 13*sec {
		t.Fatalf("Next = %d, want 13s", got)
	}
	s.Ran(time.Unix(0, 17*sec)) // covers 13 and 16
	if s.Anchor != 16*sec || s.Next().UnixNano() != 19*sec {
		t.Fatalf("after Ran(17s): anchor %d, next %v", s.Anchor, s.Next())
	}
	s.Tried(time.Unix(0, 20*sec)) // due 19 failed: next is 22
	if got := s.Next().UnixNano(); got != 22*sec || s.Anchor != 16*sec {
		t.Fatalf("after Tried(20s): next %d anchor %d, want 22s and 16s", got, s.Anchor)
	}
	s.Restart(21 * sec)
	if got := s.Next().UnixNano(); got != 24*sec {
		t.Fatalf("after Restart(21s): next %d, want 24s", got)
	}
}

// TestStartAt checks that an anchor is whole milliseconds, as stored.
func TestStartAt(t *testing.T) {
	now := time.Unix(7, 123456789)
	if got := StartAt(now); got != 7123*int64(time.Millisecond) {
		t.Fatalf("StartAt = %d, want 7.123s", got)
	}
}

// TestSucceeded checks a successful run's move of the grid: to the due
// time it covers, and to a new grid at its start when it asks again and
// the next due time would come sooner than a period after it, less the
// slack.
func TestSucceeded(t *testing.T) {
	const sec = int64(time.Second)
	at := func(n int64) time.Time { return time.Unix(0, n*sec) }
	for _, c := range []struct {
		name       string
		start      int64
		again      bool
		slack      time.Duration
		wantAnchor int64
	}{
		{"not asked: grid kept", 15, false, 0, 10},
		{"asked, no slack: new grid", 15, true, 0, 15},
		{"asked on time: grid kept", 20, true, time.Second, 20},
		{"asked a little late, within slack", 21, true, 2 * time.Second, 20},
		{"asked late, past slack: new grid", 23, true, 2 * time.Second, 23},
	} {
		s := &Schedule{ID: "h", Anchor: 10 * sec, Every: 10 * time.Second}
		s.Tried(at(12)) // a due time after a failure, forgotten by a success
		s.Succeeded(at(c.start), c.again, c.slack)
		if s.Anchor != c.wantAnchor*sec || s.later != 0 {
			t.Errorf("%s: anchor %ds (later %d), want %ds", c.name, s.Anchor/sec, s.later, c.wantAnchor)
		}
	}
}

// TestAfterRun checks which runs change the list of schedules, and so
// owe a record write: a new period, or one that ended; not a run on the
// same period.
func TestAfterRun(t *testing.T) {
	start := time.Unix(50, 0)
	l := []*Schedule{{ID: "a", Anchor: int64(10 * time.Second), Every: 10 * time.Second}}
	l, changed := AfterRun(l, "a", 10*time.Second, start, false, 0)
	if changed || len(l) != 1 || l[0].Anchor != int64(50*time.Second) {
		t.Fatalf("same period: changed %v, %+v; want unchanged, anchor moved to 50s", changed, l[0])
	}
	l, changed = AfterRun(l, "b", 0, start, false, 0)
	if changed || len(l) != 1 {
		t.Fatalf("no period, no schedule: changed %v, %d schedules", changed, len(l))
	}
	l, changed = AfterRun(l, "b", time.Second, start, true, 0)
	if !changed || len(l) != 2 || Find(l, "b").Anchor != StartAt(start) || Find(l, "b").Every != time.Second {
		t.Fatalf("a new period: changed %v, %+v", changed, Find(l, "b"))
	}
	l, changed = AfterRun(l, "a", 20*time.Second, start, true, 0)
	if !changed || Find(l, "a").Every != 20*time.Second {
		t.Fatalf("another period: changed %v, %+v", changed, Find(l, "a"))
	}
	l, changed = AfterRun(l, "b", 0, start, false, 0)
	if !changed || len(l) != 1 || Find(l, "b") != nil {
		t.Fatalf("period ended: changed %v, %d schedules", changed, len(l))
	}
}

func TestCheckPeriod(t *testing.T) {
	for _, tc := range []struct {
		every time.Duration
		want  string // in the error; "" for none
	}{
		{0, ""},                      // none
		{time.Hour, ""},              // a period
		{-time.Second, "positive"},   // negative
		{101 * time.Hour, "at most"}, // past the bound
		{1500 * time.Microsecond, "whole milliseconds"},
	} {
		err := CheckPeriod(tc.every, 100*time.Hour)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckPeriod(%v) = %v, want %q", tc.every, err, tc.want)
		}
	}
}
