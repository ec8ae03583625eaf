package keyqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// job is the tests' item: a number, with the tag the queue keeps in it.
type job struct {
	Tag
	n int
}

func jobTag(j *job) *Tag { return &j.Tag }

// fixture is a queue of string keys and job items with its lock, checking
// the invariants at every change.
type fixture struct {
	t  *testing.T
	mu sync.Mutex
	q  *Queue[string, job]
}

func newFixture(t *testing.T, opt Options[string, job]) *fixture {
	f := &fixture{t: t}
	opt.Lock, opt.Tag = &f.mu, jobTag
	opt.Changed = func() {
		if err := f.q.Check(); err != nil {
			t.Errorf("invariant broken: %v", err)
		}
	}
	f.q = New(opt)
	return f
}

// do runs fn with the lock held, then checks the invariants.
func (f *fixture) do(fn func(q *Queue[string, job])) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.q)
	if err := f.q.Check(); err != nil {
		f.t.Fatalf("invariant broken: %v", err)
	}
}

func TestOrderAndOneHolder(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	f.do(func(q *Queue[string, job]) {
		q.Add("a", job{n: 1})
		q.Add("b", job{n: 10})
		q.Add("a", job{n: 2})
		if q.Len() != 3 || q.Listed() != 2 || q.Pending() != 2 {
			t.Fatalf("Len %d, Listed %d, Pending %d; want 3, 2, 2", q.Len(), q.Listed(), q.Pending())
		}
		k, ok := q.Next()
		if !ok || k != "a" {
			t.Fatalf("Next = %q, %v; want a", k, ok)
		}
		q.Hold("a")
		q.Add("a", job{n: 3}) // added while held: not listed again
		if q.Listed() != 1 {
			t.Fatalf("a is listed while held: %d listed", q.Listed())
		}
		for _, want := range []int{1, 2, 3} {
			it, ok := q.Take("a", false, 0)
			if !ok || it.n != want {
				t.Fatalf("Take = %v, %v; want %d", it, ok, want)
			}
		}
		if _, ok := q.Take("a", false, 0); ok {
			t.Fatal("Take of an empty queue took an item")
		}
		q.Add("a", job{n: 4})
		q.Release("a") // work left: listed again, after b
		if k, _ := q.Next(); k != "b" {
			t.Fatalf("Next = %q; want b", k)
		}
		if k, _ := q.Next(); k != "a" {
			t.Fatalf("Next = %q; want a", k)
		}
	})
}

func TestHoldOfHeldKeyPanics(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.q.Hold("a")
	defer func() {
		if recover() == nil {
			t.Fatal("a second Hold of a held key did not panic")
		}
	}()
	f.q.Hold("a")
}

func TestForgetsIdleKeys(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	f.do(func(q *Queue[string, job]) {
		q.Add("a", job{n: 1})
		q.Next()
		q.Hold("a")
		q.Take("a", false, 0)
		q.Release("a")
		if len(q.keys) != 0 || q.Pending() != 0 {
			t.Fatalf("after the last item %d keys kept, %d pending; want none", len(q.keys), q.Pending())
		}
	})
}

func TestCoalesceAtBound(t *testing.T) {
	var got []int
	f := newFixture(t, Options[string, job]{MaxBacklog: 3, Coalesce: func(k string, items []job) []job {
		got = got[:0]
		for _, it := range items {
			got = append(got, it.n)
		}
		return append(items[:0], items[len(items)-1]) // keep the latest
	}})
	f.do(func(q *Queue[string, job]) {
		for i := range 4 {
			q.Add("a", job{n: i})
		}
		if len(got) != 4 || got[3] != 3 {
			t.Fatalf("Coalesce got %v; want the 3 queued and the new one", got)
		}
		if q.Len() != 1 || q.KeyLen("a") != 1 || q.Items("a")[0].n != 3 {
			t.Fatalf("after coalescing Len %d, items %v; want the latest alone", q.Len(), q.Items("a"))
		}
	})
}

// TestTagTravelsWithItem checks that the tag the queue keeps in an item
// is set by Add, comes out with the item, and goes back in with it.
func TestTagTravelsWithItem(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	f.do(func(q *Queue[string, job]) {
		first := q.Add("a", job{n: 1, Tag: Tag{Seq: 99, Awaited: true}}) // a caller's tag is overwritten
		second := q.Add("a", job{n: 2})
		if first == 0 || second <= first {
			t.Fatalf("Add returned %d then %d; want increasing numbers", first, second)
		}
		q.Hold("a")
		it, ok := q.Take("a", false, 0)
		if !ok || it.n != 1 || it.Tag != (Tag{Seq: first}) {
			t.Fatalf("Take = %+v, %v; want item 1 tagged %d, not awaited", it, ok, first)
		}
		q.PushFront("a", it) // not finished: back at the head, tag and all
		if got := q.Items("a"); len(got) != 2 || got[0].Seq != first || got[1].Seq != second {
			t.Fatalf("after PushFront the items are %+v; want %d then %d", got, first, second)
		}
		q.Release("a")
	})
}

func TestNewWithoutTagPanics(t *testing.T) {
	defer func() {
		if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "Options.Tag is nil") {
			t.Fatalf("New without Tag: recovered %v; want a panic naming Options.Tag", v)
		}
	}()
	New(Options[string, job]{Lock: &sync.Mutex{}})
}

func TestAwaitedItemIsTheCallers(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	var seq uint64
	f.do(func(q *Queue[string, job]) {
		q.Hold("a") // another holder has the key
		seq = q.AddAwaited("a", job{n: 7})
		if _, ok := q.Take("a", false, 0); ok {
			t.Fatal("a holder took an item another caller awaits")
		}
	})
	done := make(chan error)
	go func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		err := f.q.Await(context.Background(), "a", seq)
		if err == nil {
			if it, ok := f.q.Take("a", false, seq); !ok || it.n != 7 || it.Seq != seq || !it.Awaited {
				err = errors.New("the awaited item was not the caller's to take")
			}
			f.q.Release("a")
		}
		done <- err
	}()
	waitUntil(t, f, func(q *Queue[string, job]) bool { return q.Awaiting("a") == 1 })
	f.do(func(q *Queue[string, job]) { q.Release("a") })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAwaitHonoursContext(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	var seq uint64
	f.do(func(q *Queue[string, job]) {
		q.Hold("a")
		seq = q.AddAwaited("a", job{n: 1})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	f.mu.Lock()
	err := f.q.Await(ctx, "a", seq)
	f.mu.Unlock()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await = %v; want the context's deadline", err)
	}
	f.do(func(q *Queue[string, job]) {
		if q.AwaitedHead("a") || q.Awaited("a") {
			t.Fatal("the item is still awaited after its caller gave up")
		}
		if it, ok := q.Take("a", false, 0); !ok || it.n != 1 {
			t.Fatalf("Take = %v, %v; the item should stay queued for any holder", it, ok)
		}
	})
}

func TestAwaitEndsAtDrain(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	var seq uint64
	f.do(func(q *Queue[string, job]) {
		q.Hold("a")
		seq = q.AddAwaited("a", job{n: 1})
	})
	done := make(chan error)
	go func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		done <- f.q.Await(context.Background(), "a", seq)
	}()
	waitUntil(t, f, func(q *Queue[string, job]) bool { return q.Awaited("a") })
	f.do(func(q *Queue[string, job]) { q.Drain() })
	if err := <-done; !errors.Is(err, ErrDraining) {
		t.Fatalf("Await = %v; want ErrDraining", err)
	}
	f.do(func(q *Queue[string, job]) {
		if q.KeyLen("a") != 1 || q.AwaitedHead("a") {
			t.Fatal("the item of a drained Await is not left queued and unawaited")
		}
		if _, ok := q.Next(); ok {
			t.Fatal("Next popped a key while draining")
		}
	})
}

func TestWaitChangeHonoursContext(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.mu.Lock()
	err := f.q.WaitChange(ctx)
	f.mu.Unlock()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitChange = %v; want context.Canceled", err)
	}
}

func TestBlockedItemsWaitForRetry(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	f.do(func(q *Queue[string, job]) {
		q.Add("a", job{n: 1})
		q.Next()
		q.Hold("a")
		it, _ := q.Take("a", false, 0)
		q.PushFront("a", it) // not finished: back at the head
		q.Block("a", true)
		q.Release("a")
		if q.Listed() != 0 || q.HasWork("a") {
			t.Fatal("a blocked key is listed")
		}
		q.SetDue("a")
		if k, ok := q.Next(); !ok || k != "a" {
			t.Fatal("a due retry did not list the key")
		}
		q.Hold("a")
		if !q.TakeRetry("a") || q.Blocked("a") {
			t.Fatal("TakeRetry did not take the retry and unblock")
		}
		if it, ok := q.Take("a", false, 0); !ok || it.n != 1 {
			t.Fatalf("Take after the retry = %v, %v; want 1", it, ok)
		}
		q.Block("a", true)
		q.Add("a", job{n: 2})
		if _, ok := q.Take("a", false, 0); ok {
			t.Fatal("Take took an item of a blocked key")
		}
		if it, ok := q.Take("a", true, 0); !ok || it.n != 2 {
			t.Fatal("a forced Take did not take the blocked item")
		}
		q.Block("a", false)
		q.Release("a")
	})
}

func TestIdleAndOutside(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	var idle <-chan struct{}
	f.do(func(q *Queue[string, job]) {
		q.Outside(true)
		q.Add("a", job{n: 1})
		idle = q.Idle()
		q.Next()
		q.Hold("a")
		q.Take("a", false, 0)
		q.Release("a")
	})
	select {
	case <-idle:
		t.Fatal("Idle closed while work outside the queue is counted")
	default:
	}
	f.do(func(q *Queue[string, job]) { q.Outside(false) })
	select {
	case <-idle:
	default:
		t.Fatal("Idle did not close once nothing was pending")
	}
}

func TestRetryTimers(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	f := newFixture(t, Options[string, job]{Clock: clk})
	f.do(func(q *Queue[string, job]) {
		if d, ok := q.RetryAt("a", clk.now.Add(10*time.Second)); !ok || d != 10*time.Second {
			t.Fatalf("RetryAt = %v, %v; want 10s armed", d, ok)
		}
		if _, ok := q.RetryAt("a", clk.now.Add(20*time.Second)); ok {
			t.Fatal("a later retry replaced an earlier one")
		}
		if _, ok := q.RetryAt("a", clk.now.Add(5*time.Second)); !ok {
			t.Fatal("an earlier retry did not replace a later one")
		}
	})
	clk.advance(5 * time.Second)
	f.do(func(q *Queue[string, job]) {
		if !q.Due("a") || q.Armed("a") || q.Listed() != 1 {
			t.Fatal("the fired retry is not due and listed")
		}
		q.Next()
		q.Hold("a")
		q.TakeRetry("a")
		q.Release("a")
		q.RetryAt("a", clk.now.Add(time.Second))
		q.StopRetry("a")
	})
	clk.advance(time.Hour)
	f.do(func(q *Queue[string, job]) {
		if q.Due("a") || q.Listed() != 0 {
			t.Fatal("a stopped retry fired")
		}
		q.RetryAt("a", clk.now.Add(time.Second))
		q.RetryAt("b", clk.now.Add(time.Second))
		q.Drain()
		if !q.Due("a") || !q.Due("b") || q.Armed("a") {
			t.Fatal("Drain did not make the armed retries due")
		}
	})
	clk.advance(time.Hour)
	g := newFixture(t, Options[string, job]{Clock: clk})
	g.do(func(q *Queue[string, job]) {
		q.RetryAt("a", clk.now.Add(time.Second))
		q.Halt()
		if q.Due("a") || q.Armed("a") {
			t.Fatal("Halt kept a retry")
		}
	})
}

// TestConcurrentHolders has holders take the keys of many producers at
// once, checking at every change that the invariants hold, that no key
// has two holders, and that each key's items come out in order.
func TestConcurrentHolders(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	keys := []string{"a", "b", "c", "d"}
	const per = 200
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() {
			for i := range per {
				f.do(func(q *Queue[string, job]) { q.Add(k, job{n: i}) })
			}
		})
	}
	var mu sync.Mutex
	inHand := map[string]bool{}
	next := map[string]int{}
	taken := 0
	for range 3 {
		wg.Go(func() {
			for {
				f.mu.Lock()
				k, ok := f.q.Next()
				if !ok || f.q.Held(k) {
					done := taken == per*len(keys)
					f.mu.Unlock()
					if done {
						return
					}
					time.Sleep(time.Microsecond)
					continue
				}
				f.q.Hold(k)
				f.mu.Unlock()
				mu.Lock()
				if inHand[k] {
					t.Errorf("%s has two holders", k)
				}
				inHand[k] = true
				mu.Unlock()
				for {
					f.mu.Lock()
					it, ok := f.q.Take(k, false, 0)
					f.mu.Unlock()
					if !ok {
						break
					}
					mu.Lock()
					if it.n != next[k] {
						t.Errorf("%s: took %d, want %d", k, it.n, next[k])
					}
					next[k]++
					mu.Unlock()
					f.mu.Lock()
					taken++
					f.mu.Unlock()
				}
				mu.Lock()
				inHand[k] = false
				mu.Unlock()
				f.do(func(q *Queue[string, job]) { q.Release(k) })
			}
		})
	}
	wg.Wait()
	f.do(func(q *Queue[string, job]) {
		if q.Len() != 0 || q.Pending() != 0 {
			t.Fatalf("Len %d, Pending %d at the end; want 0", q.Len(), q.Pending())
		}
	})
}

// waitUntil polls cond under the lock until it holds.
func waitUntil(t *testing.T, f *fixture, cond func(q *Queue[string, job]) bool) {
	t.Helper()
	for range 5000 {
		f.mu.Lock()
		ok := cond(f.q)
		f.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition not reached in 5s")
}

// fakeClock is a clock moved by hand; its timers fire in advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// advance moves the clock and runs the timers due, in this goroutine.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
		} else {
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, t := range due {
		if !t.stopped {
			t.f()
		}
	}
}

// TestCheckReportsBrokenInvariants breaks each invariant by hand and
// expects Check to name it.
func TestCheckReportsBrokenInvariants(t *testing.T) {
	for _, c := range []struct {
		want    string
		breakIt func(q *Queue[string, job])
	}{
		{"1: a is in the held set twice", func(q *Queue[string, job]) { q.held = append(q.held, "a") }},
		{"2: b is on the ready list but not marked listed", func(q *Queue[string, job]) { q.ready = append(q.ready, "b") }},
		{"3: pending is", func(q *Queue[string, job]) { q.pending++ }},
		{"4: Len is", func(q *Queue[string, job]) { q.queued++ }},
		{"4: a has item", func(q *Queue[string, job]) { e := q.keys["a"]; e.items[0], e.items[1] = e.items[1], e.items[0] }},
		{"5: a has timer", func(q *Queue[string, job]) { q.keys["a"].timerSeq = 99 }},
		{"7: c is kept with nothing in it", func(q *Queue[string, job]) { q.keys["c"] = &entry[job]{} }},
	} {
		var mu sync.Mutex
		q := New(Options[string, job]{Lock: &mu, Tag: jobTag})
		q.Add("a", job{n: 1})
		q.Add("a", job{n: 2})
		q.Next()
		q.Hold("a")
		if err := q.Check(); err != nil {
			t.Fatalf("before breaking %q: %v", c.want, err)
		}
		c.breakIt(q)
		if err := q.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check = %v; want an error naming %q", err, c.want)
		}
	}
}

func TestClear(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	q := New(Options[string, job]{Lock: &mu, Tag: jobTag})
	q.Add("a", job{n: 1})
	q.AddAwaited("a", job{n: 2})
	q.Add("b", job{n: 3})
	q.Block("a", true)
	q.SetDue("a")
	if k, _ := q.Next(); k != "a" {
		t.Fatalf("Next: got %q, want a", k)
	}
	q.Hold("a")
	items := q.Clear("a")
	if len(items) != 2 || items[0].n != 1 || items[1].n != 2 || !items[1].Awaited {
		t.Fatalf("Clear: got %v, want items 1 and 2 (awaited)", items)
	}
	if q.Len() != 1 || q.KeyLen("a") != 0 || q.Due("a") || q.Blocked("a") {
		t.Fatalf("after Clear: Len %d, KeyLen(a) %d, Due %v, Blocked %v; want 1, 0, false, false", q.Len(), q.KeyLen("a"), q.Due("a"), q.Blocked("a"))
	}
	q.Release("a")
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	if q.Clear("none") != nil {
		t.Fatal("Clear of an unknown key: want no items")
	}
}
