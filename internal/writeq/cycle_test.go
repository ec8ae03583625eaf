package writeq

import (
	"strings"
	"testing"
)

var lim = Limits{Merged: 3, Queued: 5, Taken: 4}

// cycle returns a Cycle that took its key under lim and counted passes
// passes, with a write in flight if flying (running unless finished).
func cycle(passes int, flying, finished bool) *Cycle[*job, string] {
	c := &Cycle[*job, string]{}
	c.Took(lim)
	if flying {
		j := &job{}
		c.Begin(j, &j.f)
		if finished {
			j.f.MarkFinished()
			j.f.Close()
		}
		c.Kept = true
	}
	for range passes {
		c.Pass()
	}
	return c
}

func TestCycleRoute(t *testing.T) {
	slow := Facts{Loop: true, Slow: true}
	for _, c := range []struct {
		name             string
		passes           int
		flying, finished bool
		f                Facts
		want             Route
	}{
		{"a next state may run: merged", 1, false, false, Facts{Ready: true}, Merge},
		{"merged while fewer than Merged passes are owed", 2, false, false, Facts{Ready: true, Loop: true}, Merge},
		{"from Merged passes the write goes now", 3, false, false, Facts{Ready: true}, Inline},
		{"from Merged passes, slow writes in the loop: beside", 3, false, false, Facts{Ready: true, Loop: true, Slow: true}, Beside},
		{"a failed pass is never owed", 1, true, false, Facts{Ready: true, Loop: true, Failed: true}, Inline},
		{"a failed pass goes beside when writes are slow", 1, true, false, Facts{Ready: true, Loop: true, Slow: true, Failed: true}, Beside},
		{"nothing is owed while stopping", 1, true, false, Facts{Ready: true, Loop: true, Stopping: true}, Inline},
		{"a flush is never owed", 1, true, false, Facts{Ready: true, Loop: true, Slow: true, Flush: true}, Beside},
		{"no next state, a write running: queued behind it", 1, true, false, Facts{Loop: true}, Behind},
		{"queued behind while at most Queued passes were counted", 5, true, false, Facts{Loop: true}, Behind},
		{"past Queued passes the pass waits for the write", 6, true, false, slow, Beside},
		{"a write that returned takes nothing behind it", 1, true, true, slow, Beside},
		{"the loop's last write queues behind nothing", 1, true, false, Facts{}, Inline},
		{"no write in flight and no next state: now", 1, false, false, Facts{Loop: true}, Inline},
	} {
		t.Run(c.name, func(t *testing.T) {
			cy := cycle(c.passes, c.flying, c.finished)
			if got := cy.Route(c.f); got != c.want {
				t.Errorf("Route(%+v) after %d passes = %v, want %v", c.f, c.passes, got, c.want)
			}
		})
	}
}

func TestCycleNext(t *testing.T) {
	ready := Facts{Ready: true, Slot: true}
	for _, c := range []struct {
		name             string
		passes           int
		flying, finished bool
		owed             bool
		f                Facts
		want             Next
	}{
		{"no write in flight", 1, false, false, false, ready, Done},
		{"a next state with a slot runs beside the write", 1, true, false, false, ready, Run},
		{"even beside a write that returned", 1, true, true, true, ready, Run},
		{"no slot: the key parks on its write", 1, true, false, false, Facts{Ready: true}, Park},
		{"nothing ready: park", 1, true, false, false, Facts{Slot: true}, Park},
		{"stopping: park", 1, true, false, false, Facts{Ready: true, Slot: true, Stopping: true}, Park},
		{"from Taken passes the loop lets the key go", 4, true, false, false, ready, Park},
		{"a write returned with a result owed: flush", 1, true, true, true, Facts{}, Flush},
		{"a write returned and nothing owed: done", 1, true, true, false, Facts{}, Done},
	} {
		t.Run(c.name, func(t *testing.T) {
			cy := cycle(c.passes, c.flying, c.finished)
			if c.owed {
				cy.Backlog.Owe()
			}
			if got := cy.Next(c.f); got != c.want {
				t.Errorf("Next(%+v) = %v, want %v", c.f, got, c.want)
			}
		})
	}
}

// A loop's cycle through merged passes, a write beside, passes queued
// behind it, a flush, and the end: the invariants hold at every step.
func TestCycleKeepsItsInvariants(t *testing.T) {
	c := &Cycle[*job, string]{}
	check := func(step string) {
		t.Helper()
		if err := c.Check(); err != nil {
			t.Fatalf("after %s: %v", step, err)
		}
	}
	c.Took(lim)
	for i := range 2 {
		c.Pass()
		if r := c.Route(Facts{Ready: true, Loop: true, Slow: true}); r != Merge {
			t.Fatalf("pass %d: %v, want merge", i+1, r)
		}
		c.Kept = true
		c.Backlog.Owe()
		check("a merged pass")
	}
	c.Pass()
	if r := c.Route(Facts{Ready: true, Loop: true, Slow: true}); r != Beside {
		t.Fatalf("third pass: %v, want beside", r)
	}
	c.Backlog.Take()
	j := &job{}
	c.Begin(j, &j.f)
	check("a write beside")
	c.Pass()
	if r := c.Route(Facts{Loop: true, Slow: true}); r != Behind {
		t.Fatalf("a pass beside the write: %v, want behind", r)
	}
	c.Backlog.Owe()
	check("a pass queued behind")
	j.f.MarkFinished()
	j.f.Close()
	if n := c.Next(Facts{}); n != Flush {
		t.Fatalf("with the write returned and a result owed: %v, want flush", n)
	}
	c.Join()
	c.Backlog.Take()
	c.Kept = false
	check("the flush made inline")
	if n := c.Next(Facts{Ready: true, Slot: true}); n != Done {
		t.Fatalf("at the end: %v, want done", n)
	}
}

func TestCycleCheckReportsBrokenInvariants(t *testing.T) {
	for _, c := range []struct {
		want    string
		breakIt func(c *Cycle[*job, string])
	}{
		{"8: a write is owed by no pass counted", func(c *Cycle[*job, string]) {
			c.Backlog.Take()
			c.Backlog.Owe()
		}},
		{"10: a write is owed or in flight and its key's state is not kept", func(c *Cycle[*job, string]) { c.Kept = false }},
	} {
		cy := cycle(1, true, false)
		cy.Backlog.Owe()
		if err := cy.Check(); err != nil {
			t.Fatalf("before breaking %q: %v", c.want, err)
		}
		c.breakIt(cy)
		if err := cy.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check = %v; want an error naming %q", err, c.want)
		}
	}
}

func TestCycleResetAndTook(t *testing.T) {
	c := cycle(4, true, false)
	c.Backlog.Owe()
	c.Took(lim)
	if !c.InFlight() || !c.Backlog.Owed() || c.taken != 0 {
		t.Fatal("Took must keep the Key taken over and count passes from zero")
	}
	c.Reset()
	if c.InFlight() || c.Backlog.Owed() || c.Kept || c.taken != 0 {
		t.Fatal("Reset left something of the key")
	}
}

func TestRouteAndNextNames(t *testing.T) {
	for r, want := range map[Route]string{Inline: "inline", Beside: "beside", Merge: "merge", Behind: "behind", 9: "Route(9)"} {
		if r.String() != want {
			t.Errorf("Route %d prints %q, want %q", uint8(r), r.String(), want)
		}
	}
	for n, want := range map[Next]string{Done: "done", Run: "run", Park: "park", Flush: "flush", 9: "Next(9)"} {
		if n.String() != want {
			t.Errorf("Next %d prints %q, want %q", uint8(n), n.String(), want)
		}
	}
	if !Merge.Owes() || !Behind.Owes() || Inline.Owes() || Beside.Owes() {
		t.Error("Owes is true exactly for merge and behind")
	}
}
