package writeq_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/opbus/opbus/internal/writeq"
)

// A key's loop: the first result's write goes beside the next passes on a
// goroutine of its own, in one of the slots; the results that come while
// it is in flight queue behind it, and the write after carries the latest
// of them with the statuses they published, in order.
func Example() {
	slots := writeq.NewSlots(2)
	var cost writeq.Cost
	var mu sync.Mutex // the owner's lock, which orders Finished with its state
	same := func(a, b string) bool { return a == b }

	write := func(record string, statuses []string) *writeq.Flight {
		f := &writeq.Flight{}
		f.Start()
		go func() {
			slots.Take()
			start := time.Now()
			fmt.Println("write", record, "after statuses", statuses)
			cost.Add(time.Since(start))
			slots.Free()
			mu.Lock()
			f.MarkFinished()
			mu.Unlock()
			f.Close()
		}()
		return f
	}

	var backlog writeq.Backlog[string]
	backlog.Pass()
	inFlight := write("r1", backlog.Take())
	// Results r2, r3 and r4 come while r1's write is in flight: each is
	// queued behind it, with the status it published.
	for _, status := range []string{"busy", "busy", "ready"} {
		backlog.Pass()
		backlog.Owe()
		backlog.Note(status, same)
	}
	inFlight.Wait() // at most one write of the key in flight
	if backlog.Owed() {
		write("r4", backlog.Take()).Wait()
	}
	fmt.Println("owed after:", backlog.Owed())
	// Output:
	// write r1 after statuses []
	// write r4 after statuses [busy ready]
	// owed after: false
}

// A loop that has nothing more to run for a key parks it on its write in
// flight and goes to other keys. The write's goroutine, once the write
// returned, claims the key (no loop took it over meanwhile) with the
// backlog it owes, makes that write, and lets the key go.
func ExampleParking() {
	type job struct {
		record string
		flight writeq.Flight
	}
	var mu sync.Mutex // the owner's lock
	var parking writeq.Parking[string, *job, string]
	var loop writeq.Key[*job, string]

	first := &job{record: "r1"}
	loop.Begin(first, &first.flight) // the pass returns its write to the loop
	loop.Backlog.Pass()
	loop.Backlog.Owe() // a later result, queued behind r1
	mu.Lock()
	parking.Park("a", &loop)
	mu.Unlock()

	// The write's goroutine, once r1 is written:
	mu.Lock()
	first.flight.MarkFinished()
	owed, mine := parking.Claim("a", first)
	mu.Unlock()
	first.flight.Close()
	fmt.Println("claimed:", mine, "owes a write:", owed.Owed(), "still parked:", parking.Parked("a"))
	// Output:
	// claimed: true owes a write: true still parked: false
}

// A loop drives its key's write cycle: each pass returns its write, the
// Cycle routes it, the loop places it and asks what to do next. Two
// states are queued: the first pass merges its write into the second's,
// which goes beside the next pass on a goroutine of its own; a third
// pass, beside it, queues its write behind it, and once the write in
// flight returned the loop flushes what the third pass owes.
func ExampleCycle() {
	type job struct {
		record string
		flight writeq.Flight
	}
	var mu sync.Mutex // the owner's lock
	var c writeq.Cycle[*job, string]
	c.Took(writeq.Limits{Merged: 8, Queued: 64, Taken: 64})
	release := make(chan struct{}) // lets the write in flight return
	var inFlight *job
	place := func(record string, f writeq.Facts) {
		c.Pass()
		mu.Lock()
		r := c.Route(f)
		mu.Unlock()
		fmt.Println(record, "→", r)
		switch r {
		case writeq.Merge, writeq.Behind:
			c.Backlog.Owe()
			c.Kept = true
		case writeq.Beside:
			c.Backlog.Take()
			inFlight = &job{record: record}
			c.Begin(inFlight, &inFlight.flight)
			c.Kept = true
			go func(j *job) {
				<-release // the store writes j.record
				mu.Lock()
				j.flight.MarkFinished()
				mu.Unlock()
				j.flight.Close()
			}(inFlight)
		}
	}
	slow := writeq.Facts{Loop: true, Slow: true}
	place("r1", writeq.Facts{Loop: true, Slow: true, Ready: true}) // r2 is queued
	place("r2", slow)
	place("r3", slow) // its state came while r2's write runs
	close(release)
	<-inFlight.flight.Done()
	mu.Lock()
	fmt.Println("next:", c.Next(writeq.Facts{}))
	mu.Unlock()
	// Output:
	// r1 → merge
	// r2 → beside
	// r3 → behind
	// next: flush
}
