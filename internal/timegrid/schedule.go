package timegrid

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A Schedule is a handler's timer on one incarnation of one object: the
// handler is due at Anchor + k·Every for k ≥ 1, even if its value did not
// change.
//
// Only ID, Anchor and Every are stored. A run moves the anchor in memory
// to the latest due time it covers, which is on the same grid, so a stored
// anchor is stale but never wrong. After a run that did not succeed, the
// schedule is due at a later due time kept in memory only.
//
// Times are Unix nanoseconds, to keep a schedule small (48 bytes): a
// running program keeps one per object per scheduled handler.
type Schedule struct {
	ID     string        // the handler's
	Anchor int64         // a due time (or the start) at which the handler is known to have run
	Every  time.Duration // the period
	later  int64         // in memory: a due time after a run that did not succeed; 0 for none
}

// Period returns s's period in nanoseconds (see [Period]).
func (s *Schedule) Period() int64 { return Period(int64(s.Every)) }

// Next returns when the handler is due: the first due time after the
// anchor, or after a run that did not succeed.
func (s *Schedule) Next() time.Time {
	return time.Unix(0, Next(s.Anchor, s.Period(), s.later))
}

// Ran moves the anchor to the latest due time at or before now: a run that
// began at now covers every due time up to it.
func (s *Schedule) Ran(now time.Time) {
	s.Anchor, s.later = Ran(s.Anchor, s.Period(), now.UnixNano()), 0
}

// Tried notes a due run at now that did not succeed: the schedule is next
// due at the first due time after now.
func (s *Schedule) Tried(now time.Time) {
	s.later = Tried(s.Anchor, s.Period(), s.later, now.UnixNano())
}

// Restart starts a new grid at anchor, forgetting a due time after a run
// that did not succeed.
func (s *Schedule) Restart(anchor int64) { s.Anchor, s.later = anchor, 0 }

// StartAt returns the anchor of a schedule started at now: whole
// milliseconds, as a record stores it, so that memory and store agree.
func StartAt(now time.Time) int64 { return now.UnixMilli() * int64(time.Millisecond) }

// Succeeded notes a run that began at start and succeeded, and asks
// (again) for another a period after it, or does not: the anchor moves as
// Ran moves it, in memory only. A run that asks again restarts the grid
// at start (see StartAt) if the next due time would come sooner than a
// period after start less slack: the caller gives no slack after a run
// that was not due (its value changed), so that a run asked for is never
// sooner than asked, and some (such as a tenth of the period) after a due
// run, whose start may pass its due time a little, so that only one that
// began late (such as the run that collapses due times missed while no
// program ran) starts a new grid.
func (s *Schedule) Succeeded(start time.Time, again bool, slack time.Duration) {
	s.Ran(start)
	if again && s.Next().Before(start.Add(s.Every-slack)) {
		s.Restart(StartAt(start))
	}
}

// AfterRun returns l after a successful run of handler id that began at
// start, and reports whether it changed in a way the store must learn:
// every is the period the handler has now (0: none), again whether the
// run asked for another, slack as for [Schedule.Succeeded]. A period that
// ended drops the schedule, and a new period starts a new one at start;
// both change l. A run on the same period moves the schedule in memory
// only (see Succeeded), a new grid included: l is unchanged, and no
// write is owed for a run alone. The store keeps the old anchor until the
// record is written for another reason, which at worst makes one more run
// at a restart (the run that collapses the due times missed). The run
// covers the due times up to its start, which it saw; one that passed
// while it ran is due at once after it.
func AfterRun(l []*Schedule, id string, every time.Duration, start time.Time, again bool, slack time.Duration) ([]*Schedule, bool) {
	s := Find(l, id)
	switch {
	case every == 0:
		return Drop(l, id), s != nil
	case s != nil && s.Every == every:
		s.Succeeded(start, again, slack)
		return l, false
	}
	return Put(l, &Schedule{ID: id, Anchor: StartAt(start), Every: every}), true
}

// Find returns the schedule of handler id in l, or nil.
func Find(l []*Schedule, id string) *Schedule {
	for _, s := range l {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Put returns l, kept in ID order, with s in place of the schedule of its
// handler. l may be changed in place.
func Put(l []*Schedule, s *Schedule) []*Schedule {
	i, found := slices.BinarySearchFunc(l, s.ID, func(x *Schedule, id string) int { return strings.Compare(x.ID, id) })
	if found {
		l[i] = s
		return l
	}
	return slices.Insert(l, i, s)
}

// Drop returns l without the schedule of handler id. l may be changed in
// place.
func Drop(l []*Schedule, id string) []*Schedule {
	return slices.DeleteFunc(l, func(s *Schedule) bool { return s.ID == id })
}

// CheckPeriod reports why every cannot be the period of a handler's
// schedule, at most max: it is negative, longer than max, or not whole
// milliseconds (a record stores periods in milliseconds). 0 is none.
func CheckPeriod(every, max time.Duration) error {
	switch {
	case every < 0:
		return errors.New("expected a positive period, or 0 for none")
	case every > max:
		return fmt.Errorf("expected at most %v (100 years: schedules count time in Unix nanoseconds, which end in 2262)", max)
	case every%time.Millisecond != 0:
		return errors.New("expected whole milliseconds (schedules are stored in milliseconds)")
	}
	return nil
}
