// Package timegrid is the arithmetic of a periodic schedule: a grid of due
// times anchor + k·period for k ≥ 1, in Unix nanoseconds; the Schedule
// itself, a handler's timer, with the list of them a record keeps and
// what a run does to it; and the Tick, the one timer armed for the
// earliest due time of one object's schedules.
//
// Invariants:
//   - Every time it computes lies on the grid of the anchor it is given
//     (or is a later due time after a failure, itself on the grid).
//   - Nothing wraps: past the end of int64 the arithmetic saturates at the
//     end of time, so a schedule whose next due time would wrap into the
//     past is never due, instead of due again and again.
//   - A period is at least 1 nanosecond, so that division is defined
//     whatever a stored record holds.
//   - A list of schedules that Put and Drop keep is in ID order, with at
//     most one schedule per ID.
//   - A run on a schedule's own period changes the schedule in memory
//     only; AfterRun reports a change of the list (a record write) only
//     for a schedule started, given a new period, or dropped.
//   - Rearm keeps at most one armed timer per Tick chain: it stops the
//     one it replaces, and replaces it only when the due time changes.
package timegrid

import "math"

// Period returns every as a period: at least 1.
func Period(every int64) int64 { return max(every, 1) }

// AddSat returns a + b, saturated at the ends of int64 instead of wrapping.
func AddSat(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// Since returns how many whole periods lie between anchor and now, 0 if
// now is not after the anchor.
func Since(anchor, period, now int64) int64 {
	if now <= anchor {
		return 0
	}
	return AddSat(now, -anchor) / period // saturated: a lower bound, still on the grid
}

// Next returns the first due time after anchor, or later if it is set
// (not 0): a due time after a run that did not succeed.
func Next(anchor, period, later int64) int64 {
	if later != 0 {
		return later
	}
	return AddSat(anchor, period)
}

// Ran returns the anchor moved to the latest due time at or before now: a
// run at now covers every due time up to it.
func Ran(anchor, period, now int64) int64 {
	if k := Since(anchor, period, now); k > 0 {
		return anchor + k*period // at most now - anchor: no overflow
	}
	return anchor
}

// Tried returns the due time that follows a due run at now that did not
// succeed, given the current later (0 for none): the first due time after
// now, unless later is already after now.
func Tried(anchor, period, later, now int64) int64 {
	if later == 0 || later <= now {
		k := Since(anchor, period, now)
		return AddSat(anchor+k*period, period)
	}
	return later
}
