package record

import (
	"testing"
	"time"
)

func TestTombstoneExpires(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	r := Tombstone[[16]byte, slots, *timer]("u1", now)
	if r.Inc != "u1" || r.EndedAt() != now.UnixMilli() {
		t.Fatalf("got Inc %q EndedAt %d, want u1 and %d", r.Inc, r.EndedAt(), now.UnixMilli())
	}
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{{0, false}, {TombstoneTTL, false}, {TombstoneTTL + time.Millisecond, true}} {
		if got := r.Expired(now.Add(c.after)); got != c.want {
			t.Errorf("Expired %v later: got %v, want %v", c.after, got, c.want)
		}
	}
	if live := New[[16]byte, slots, *timer](1); live.Expired(now.Add(100 * TombstoneTTL)) {
		t.Error("a record that is no tombstone expired")
	}
	if r := Tombstone[[16]byte, slots, *timer]("u1", time.UnixMilli(0)); r.EndedAt() == 0 {
		t.Error("a tombstone made at the epoch has no EndedAt")
	}
}
