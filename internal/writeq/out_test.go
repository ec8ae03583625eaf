package writeq

import (
	"context"
	"sync"
	"testing"
)

// funcWriter is a Writer made of two functions.
type funcWriter struct {
	make    func(*job)
	claimed func(*job, Backlog[string]) (*job, *Flight, bool)
}

func (w funcWriter) Make(_ context.Context, j *job) { w.make(j) }

func (w funcWriter) Claimed(_ context.Context, j *job, owed Backlog[string]) (*job, *Flight, bool) {
	return w.claimed(j, owed)
}

// Out of a parked key's write claims the key, makes the write its
// backlog owes, and lets the key go (invariant 5, the write's side).
func TestOutClaimsTheParkedKey(t *testing.T) {
	var mu sync.Mutex
	var p Parking[string, *job, string]
	slots := NewSlots(1)
	var k Key[*job, string]
	first, second := &job{}, &job{}
	k.Begin(first, &first.f)
	k.Backlog.Pass()
	k.Backlog.Owe()
	k.Backlog.Note("s1", func(a, b string) bool { return a == b })
	p.Park("a", &k)

	var wrote []*job
	var claims []Backlog[string]
	write := func(j *job) {
		if slots.Taken() != 1 {
			t.Errorf("write made with %d slots taken; want 1 (invariant 4)", slots.Taken())
		}
		wrote = append(wrote, j)
	}
	claimed := func(j *job, owed Backlog[string]) (*job, *Flight, bool) {
		if !j.f.Finished() {
			t.Errorf("claimed before the write was marked finished (invariant 2)")
		}
		claims = append(claims, owed)
		if !owed.Owed() {
			return nil, nil, false // lets the key go
		}
		mu.Lock()
		p.Next("a", second, &second.f)
		mu.Unlock()
		return second, &second.f, true
	}
	p.Out(context.Background(), &mu, slots, "a", first, &first.f, funcWriter{write, claimed})

	if len(wrote) != 2 || wrote[0] != first || wrote[1] != second {
		t.Fatalf("writes made = %v; want the parked write, then the one its backlog owed", wrote)
	}
	if len(claims) != 2 || !claims[0].Owed() || claims[0].Passes() != 1 || claims[1].Owed() {
		t.Fatalf("claims = %+v; want the parked backlog, then none owed (invariant 5)", claims)
	}
	for _, j := range []*job{first, second} {
		select {
		case <-j.f.Done():
		default:
			t.Fatal("a write Out made is not closed (invariant 2)")
		}
	}
	if p.Parked("a") || slots.Taken() != 0 {
		t.Fatalf("after Out: parked %v, slots taken %d; want the key let go and no slot taken (invariants 4, 5)", p.Parked("a"), slots.Taken())
	}
}

// Out of a write whose key a loop took over leaves the key to that loop,
// which joins the write (invariant 5, the loop's side).
func TestOutLeavesATakenKeyToItsLoop(t *testing.T) {
	var mu sync.Mutex
	var p Parking[string, *job, string]
	slots := NewSlots(1)
	var k, loop Key[*job, string]
	j := &job{}
	k.Begin(j, &j.f)
	k.Backlog.Owe()
	p.Park("a", &k)
	if !p.TakeOver("a", &loop) {
		t.Fatal("TakeOver of a parked key failed")
	}
	joined := make(chan *job)
	go func() {
		got, _ := loop.Join()
		joined <- got
	}()
	p.Out(context.Background(), &mu, slots, "a", j, &j.f, funcWriter{func(*job) {}, func(*job, Backlog[string]) (*job, *Flight, bool) {
		t.Error("Out claimed a key a loop took over (invariant 5)")
		return nil, nil, false
	}})
	if got := <-joined; got != j {
		t.Fatalf("the loop joined %v; want the write Out made", got)
	}
	if !loop.Backlog.Owed() {
		t.Fatal("the loop lost the backlog it took over")
	}
}
