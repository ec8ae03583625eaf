package timegrid

import (
	"math"
	"testing"
)

// TestOnTheGrid checks that Ran and Tried keep times on the anchor's
// grid: due times are anchor + k·period for k ≥ 1.
func TestOnTheGrid(t *testing.T) {
	const anchor, period = 1000, 300
	for _, tc := range []struct{ now, ran, tried int64 }{
		{999, 1000, 1300},
		{1000, 1000, 1300},
		{1299, 1000, 1300},
		{1300, 1300, 1600},
		{1301, 1300, 1600},
		{5000, 4900, 5200},
	} {
		if got := Ran(anchor, period, tc.now); got != tc.ran {
			t.Errorf("Ran(now=%d) = %d, want %d", tc.now, got, tc.ran)
		}
		if got := Tried(anchor, period, 0, tc.now); got != tc.tried {
			t.Errorf("Tried(now=%d) = %d, want %d", tc.now, got, tc.tried)
		}
	}
	if got := Tried(anchor, period, 1900, 1500); got != 1900 {
		t.Errorf("Tried with a later due time after now = %d, want it kept", got)
	}
}

// TestSaturates checks that nothing wraps past the end of int64.
func TestSaturates(t *testing.T) {
	const period = 250 * 365 * 24 * 3600 * 1e9 // 250 years
	anchor := int64(1.7e18)                    // 2023
	if n := Next(anchor, period, 0); n != math.MaxInt64 {
		t.Errorf("Next 250 years after 2023 = %d, want the end of time", n)
	}
	if l := Tried(anchor, period, 0, anchor+1); l != math.MaxInt64 {
		t.Errorf("Tried = %d, want the end of time", l)
	}
	if AddSat(math.MinInt64, -1) != math.MinInt64 || Period(0) != 1 {
		t.Error("AddSat or Period at the edges")
	}
}
