package timegrid

import (
	"slices"
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
