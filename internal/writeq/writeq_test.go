package writeq

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSlotsBoundWritesUnderWay(t *testing.T) {
	const n, writers = 3, 12
	s := NewSlots(n)
	var under, most atomic.Int32
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range 50 {
				s.Take()
				cur := under.Add(1)
				for {
					m := most.Load()
					if cur <= m || most.CompareAndSwap(m, cur) {
						break
					}
				}
				time.Sleep(10 * time.Microsecond)
				under.Add(-1)
				s.Free()
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > n {
		t.Fatalf("%d writes under way at once, want at most %d", m, n)
	}
	if s.Taken() != 0 {
		t.Fatalf("%d slots taken after every write freed its own, want 0", s.Taken())
	}
}

func TestSlotsTakeWaitsForFree(t *testing.T) {
	s := NewSlots(1)
	s.Take()
	took := make(chan struct{})
	go func() {
		s.Take()
		close(took)
	}()
	select {
	case <-took:
		t.Fatal("Take returned while the only slot was taken")
	case <-time.After(20 * time.Millisecond):
	}
	s.Free()
	<-took
	if s.Taken() != 1 {
		t.Fatalf("Taken = %d, want 1", s.Taken())
	}
}

func TestNewSlotsRefusesNone(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewSlots(0) did not panic")
		}
	}()
	NewSlots(0)
}

func TestCostMovesAnEighthTowardEachWrite(t *testing.T) {
	var c Cost
	if c.Average() != 0 || c.AtLeast(1) {
		t.Fatalf("a new Cost averages %v, want 0", c.Average())
	}
	c.Add(800 * time.Microsecond)
	if got := c.Average(); got != 100*time.Microsecond {
		t.Fatalf("after one 800µs write the average is %v, want 100µs", got)
	}
	if !c.AtLeast(100*time.Microsecond) || c.AtLeast(101*time.Microsecond) {
		t.Fatalf("AtLeast around the average %v is wrong", c.Average())
	}
	for range 200 {
		c.Add(time.Millisecond)
	}
	if got := c.Average(); got < 990*time.Microsecond || got > time.Millisecond {
		t.Fatalf("after many 1ms writes the average is %v, want about 1ms and never above", got)
	}
	for range 200 {
		c.Add(0)
	}
	if got := c.Average(); got > 10*time.Nanosecond {
		t.Fatalf("after many instant writes the average is %v, want about 0", got)
	}
}

func TestFlightDoneClosesAtCloseOnly(t *testing.T) {
	var f Flight
	if f.Started() {
		t.Fatal("a zero Flight is started")
	}
	f.Start()
	if !f.Started() || f.Finished() {
		t.Fatalf("after Start: started %v finished %v, want true false", f.Started(), f.Finished())
	}
	waited := make(chan struct{})
	go func() {
		f.Wait()
		close(waited)
	}()
	f.MarkFinished()
	select {
	case <-waited:
		t.Fatal("Wait returned before Close")
	case <-time.After(20 * time.Millisecond):
	}
	if !f.Finished() {
		t.Fatal("Finished is false after MarkFinished")
	}
	f.Close()
	<-waited
	select {
	case <-f.Done():
	default:
		t.Fatal("Done is open after Close")
	}
}

type st struct {
	level string
	n     int
}

func same(a, b st) bool { return a.level == b.level }

func TestBacklogMergesOwedResults(t *testing.T) {
	var b Backlog[st]
	if b.Owed() || b.Passes() != 0 {
		t.Fatal("a zero Backlog owes something")
	}
	for i, level := range []string{"a", "a", "b", "b", "a"} {
		if got := b.Pass(); got != i+1 {
			t.Fatalf("Pass %d returned %d", i+1, got)
		}
		b.Owe()
		b.Note(st{level, i}, same)
	}
	if !b.Owed() || b.Passes() != 5 {
		t.Fatalf("owed %v passes %d, want true 5", b.Owed(), b.Passes())
	}
	if last, ok := b.Last(); !ok || last != (st{"a", 4}) {
		t.Fatalf("Last = %v %v, want {a 4}", last, ok)
	}
	got := b.Take()
	want := []st{{"a", 0}, {"b", 2}, {"a", 4}}
	if len(got) != len(want) {
		t.Fatalf("Take = %v, want %v (consecutive equal levels once, in order)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Take = %v, want %v", got, want)
		}
	}
	if b.Owed() || b.Passes() != 0 {
		t.Fatalf("after Take: owed %v passes %d, want nothing owed", b.Owed(), b.Passes())
	}
	if _, ok := b.Last(); ok {
		t.Fatal("after Take a status is still kept")
	}
}

func TestBacklogOverAndForgive(t *testing.T) {
	var b Backlog[st]
	for range 3 {
		b.Pass()
	}
	if b.Over(3) || !b.Over(2) {
		t.Fatalf("with 3 passes: Over(3) %v Over(2) %v, want false true", b.Over(3), b.Over(2))
	}
	b.Owe()
	b.Note(st{"x", 0}, same)
	b.Forgive()
	if b.Owed() {
		t.Fatal("Forgive left a write owed")
	}
	if _, ok := b.Last(); !ok || b.Passes() != 3 {
		t.Fatal("Forgive dropped the statuses or the passes counted")
	}
	b.Reset()
	if b.Owed() || b.Passes() != 0 {
		t.Fatal("Reset left something owed")
	}
	if _, ok := b.Last(); ok {
		t.Fatal("Reset left a status")
	}
}
