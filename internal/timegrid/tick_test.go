package timegrid

import (
	"testing"
	"time"
)

// stopper is a test timer that counts its stops.
type stopper struct{ stops int }

func (s *stopper) Stop() bool { s.stops++; return true }

// TestRearm checks that a Tick is kept while its due time stays, and
// replaced, the old one stopped, when it changes; and that Stop of a nil
// Tick does nothing.
func TestRearm(t *testing.T) {
	at := time.Unix(100, 0)
	var arms []*Tick
	var timers []*stopper
	arm := func(n *Tick) Stopper {
		arms = append(arms, n)
		timers = append(timers, &stopper{})
		return timers[len(timers)-1]
	}
	t1 := Rearm(nil, at, arm)
	if len(arms) != 1 || arms[0] != t1 || !t1.At().Equal(at) {
		t.Fatalf("first Rearm: %d arms, tick at %v", len(arms), t1.At())
	}
	if t2 := Rearm(t1, at.In(time.FixedZone("x", 3600)), arm); t2 != t1 || len(arms) != 1 {
		t.Fatal("Rearm at the same instant armed anew")
	}
	t3 := Rearm(t1, at.Add(time.Second), arm)
	if t3 == t1 || len(arms) != 2 || arms[1] != t3 || timers[0].stops != 1 || timers[1].stops != 0 {
		t.Fatalf("Rearm at another time: new tick %v, arms %d, stops %d/%d", t3 != t1, len(arms), timers[0].stops, timers[1].stops)
	}
	t3.Stop()
	if timers[1].stops != 1 {
		t.Fatal("Stop did not stop the timer")
	}
	var none *Tick
	none.Stop()
}

// TestEarliest checks the earliest due time of a list of schedules, and
// that a schedule due by the time a pass looked is first noted as tried
// then, so that it is next due at its next due time.
func TestEarliest(t *testing.T) {
	sec := func(n int64) time.Time { return time.Unix(n, 0) }
	if !Earliest(nil, sec(5)).IsZero() {
		t.Fatal("Earliest of no schedule is not zero")
	}
	a := &Schedule{ID: "a", Anchor: int64(10 * time.Second), Every: 10 * time.Second} // due 20
	b := &Schedule{ID: "b", Anchor: int64(10 * time.Second), Every: 4 * time.Second}  // due 14
	if got := Earliest([]*Schedule{a, b}, time.Time{}); !got.Equal(sec(14)) {
		t.Fatalf("Earliest = %v, want 14s", got.Unix())
	}
	// a pass looked at 15 and b did not run: next due 18, a still 20
	if got := Earliest([]*Schedule{a, b}, sec(15)); !got.Equal(sec(18)) || !a.Next().Equal(sec(20)) {
		t.Fatalf("Earliest after a pass at 15 = %v (a due %v), want 18 (a 20)", got.Unix(), a.Next().Unix())
	}
	// a pass that looked before a came due leaves it alone
	if got := Earliest([]*Schedule{a}, sec(19)); !got.Equal(sec(20)) {
		t.Fatalf("Earliest = %v, want 20", got.Unix())
	}
}
