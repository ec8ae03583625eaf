package writeq

import (
	"errors"
	"fmt"
)

// Route is where the write of a pass goes: the Cycle of its key decides
// (Route), the loop that holds the key places it there.
type Route uint8

const (
	// Inline: the loop makes the write now, in its own goroutine, once
	// the write in flight is joined.
	Inline Route = iota
	// Beside: the loop joins the write in flight, then puts this one in
	// flight (Key.Begin) on a goroutine of its own, beside the key's next
	// pass.
	Beside
	// Merge: the write is owed to the next pass of the key, which may run
	// now; the next pass's write carries it.
	Merge
	// Behind: the write is owed to the write after the one in flight,
	// which is still running; that write carries it.
	Behind
)

// String returns the name of r.
func (r Route) String() string {
	switch r {
	case Inline:
		return "inline"
	case Beside:
		return "beside"
	case Merge:
		return "merge"
	case Behind:
		return "behind"
	}
	return fmt.Sprintf("Route(%d)", uint8(r))
}

// Owes reports whether r leaves the write owed to a later one (Merge,
// Behind): the loop keeps what it would have written, then notes it in
// the Backlog (Backlog.Owe).
func (r Route) Owes() bool { return r == Merge || r == Behind }

// Next is what the loop that holds a key does once the write of its last
// pass is placed (Cycle.Next).
type Next uint8

const (
	// Done: no write is in flight, or the one in flight returned and
	// nothing more is owed: the loop's passes of the key end (it joins
	// the write and lets the key go).
	Done Next = iota
	// Run: the loop runs the next state of the key now, beside the write
	// in flight.
	Run
	// Park: the loop parks the key on its write, which still runs
	// (Parking.Park), and goes to other keys' work.
	Park
	// Flush: the write in flight returned and a later result is owed: the
	// loop makes that write now (a flush), then asks again.
	Flush
)

// String returns the name of n.
func (n Next) String() string {
	switch n {
	case Done:
		return "done"
	case Run:
		return "run"
	case Park:
		return "park"
	case Flush:
		return "flush"
	}
	return fmt.Sprintf("Next(%d)", uint8(n))
}

// Limits bound a Cycle: the caller's policy.
type Limits struct {
	Merged int // a pass merges its write into the next while fewer passes than this are owed
	Queued int // a pass queues its write behind the one in flight while at most this many passes were counted since it began
	Taken  int // the loop runs a next state beside a write only while it made fewer passes of the key than this
}

// Facts are what the caller alone knows when its Cycle decides, read
// under the caller's lock.
type Facts struct {
	// Loop: the loop goes on with the key after this write, so the write
	// may go beside its next pass or behind the write in flight; false
	// for the write the loop makes as it ends its passes of the key.
	Loop bool
	// Slow: writes take long enough to be worth a goroutine of their own
	// (Cost.AtLeast): Beside rather than Inline.
	Slow bool
	// Flush: the write is the one a Backlog owes, made because no pass
	// came to carry it: it goes now.
	Flush bool
	// Failed: the pass failed to write already; its write goes now, so
	// that the failure is retried from it.
	Failed bool
	// Stopping: the caller is stopping: nothing is owed, no next state
	// runs.
	Stopping bool
	// Ready: a next state of the key is queued and may be taken now (for
	// Next: by this loop).
	Ready bool
	// Slot: the loop holds, or may take, the handler slot a next pass
	// needs (Next).
	Slot bool
}

// Now returns where a write made now goes: Beside if the loop goes on
// with the key and writes are slow, else Inline.
func (f Facts) Now() Route {
	if f.Loop && f.Slow {
		return Beside
	}
	return Inline
}

// Cycle is the write cycle of one key, driven by the loop that holds the
// key: each pass of the key returns its write to the loop, which counts
// the pass (Pass), asks the Cycle where its write goes (Route), places it
// there, and asks what to do next (Next). A Cycle keeps what the loop
// holds of the key's writes (the Key: the write in flight and the Backlog
// of the next), the passes the loop made since it took the key, and
// whether the caller keeps the state of the key's last pass for shutdown
// (Kept). The caller supplies what it alone knows (Facts) and makes the
// writes; the Cycle decides. Route, Next and Check read whether the write
// in flight runs, so they are called under the caller's lock (see
// Flight.Finished).
//
// Invariants (8 to 10 of the package; Check names 8 and 10, Route keeps
// 9):
//   - 8: a write is owed only by a pass that was counted (Pass).
//   - 9: a failed pass, a flush and a pass while the caller stops are
//     never owed (Route gives Beside or Inline); Merge is refused from
//     Limits.Merged passes owed, Behind past Limits.Queued passes since
//     the write in flight began, Run from Limits.Taken passes.
//   - 10: a Cycle with a write in flight or owed keeps its key's state
//     for shutdown (Kept), so that a stop that abandons the key saves it.
type Cycle[J comparable, S any] struct {
	Key[J, S]
	// Kept says that the caller keeps the state of the key's last pass
	// for shutdown while its write is owed or in flight.
	Kept  bool
	lim   Limits
	taken int
}

// Took starts the loop's passes of the key it took, under lim: no pass
// counted yet. The Key is kept: the loop may have taken it over from a
// Parking.
func (c *Cycle[J, S]) Took(lim Limits) { c.lim, c.taken = lim, 0 }

// Pass counts one more pass of the key, by the loop and in the Backlog.
func (c *Cycle[J, S]) Pass() {
	c.taken++
	c.Backlog.Pass()
}

// Reset forgets everything: the loop takes a key afresh.
func (c *Cycle[J, S]) Reset() { *c = Cycle[J, S]{} }

// Route decides where the write of the pass just counted goes: merged
// into the next pass of the key if one may run now and fewer than
// Limits.Merged passes are owed; queued behind the write in flight if it
// still runs, the loop goes on, and at most Limits.Queued passes were
// counted since it began; else made now (Facts.Now). Nothing is owed by
// a failed pass, a flush, or while the caller stops.
func (c *Cycle[J, S]) Route(f Facts) Route {
	if !f.Failed && !f.Flush && !f.Stopping {
		if f.Ready && c.Backlog.Passes() < c.lim.Merged {
			return Merge
		}
		if f.Loop && c.Running() && !c.Backlog.Over(c.lim.Queued) {
			return Behind
		}
	}
	return f.Now()
}

// Next decides what the loop does once the write of its last pass is
// placed: with no write in flight, Done; a next state that may run now,
// with a handler slot, below Limits.Taken passes and while the caller
// does not stop, Run; a write that still runs, Park; a write that
// returned with a later result owed, Flush; else Done.
func (c *Cycle[J, S]) Next(f Facts) Next {
	switch {
	case !c.InFlight():
		return Done
	case !f.Stopping && f.Ready && f.Slot && c.taken < c.lim.Taken:
		return Run
	case c.Running():
		return Park
	case c.Backlog.Owed():
		return Flush
	}
	return Done
}

// Check reports every broken invariant of c, each error naming the
// package invariant it breaks; nil if none is. The caller checks between
// passes, under its lock.
func (c *Cycle[J, S]) Check() error {
	var errs []error
	if c.Backlog.Owed() && c.Backlog.Passes() == 0 {
		errs = append(errs, errors.New("8: a write is owed by no pass counted"))
	}
	if (c.InFlight() || c.Backlog.Owed()) && !c.Kept {
		errs = append(errs, errors.New("10: a write is owed or in flight and its key's state is not kept for shutdown"))
	}
	return errors.Join(errs...)
}
