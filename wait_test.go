package opbus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestWaitWithoutRun: before Run starts, Wait dispatches the queued states
// itself instead of blocking until its context ends.
func TestWaitWithoutRun(t *testing.T) {
	b := newBus(t, nil)
	var h recorder
	must(t, b.Handle("h", h.handle, On{Fields: []string{"x"}}))
	for i := range 3 {
		must(t, b.Observe(t.Context(), podKey, map[string]any{"x": i}))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	must(t, b.Wait(ctx))
	if h.count() != 3 {
		t.Fatalf("handler ran %d times, want 3 (once per state)", h.count())
	}
	// Run still starts and works afterwards.
	stop := run(t, b)
	must(t, b.Observe(t.Context(), podKey, map[string]any{"x": 9}))
	must(t, b.Wait(ctx))
	must(t, stop())
	if h.count() != 4 {
		t.Fatalf("handler ran %d times, want 4", h.count())
	}
}

// TestSettleWaitsForRetries: Wait returns while a failed handler waits for
// its retry; Settle returns only once it succeeded, or failed for good —
// with Run, and without Run (Settle then runs the retries itself when they
// are due); a handler that keeps failing keeps the bus from settling until
// ctx ends.
func TestSettleWaitsForRetries(t *testing.T) {
	for _, withRun := range []bool{true, false} {
		t.Run(map[bool]string{true: "with Run", false: "without Run"}[withRun], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBus(t, &Options{Backoff: Backoff{Initial: time.Second, Jitter: -1}})
				var flaky, stubborn atomic.Int32
				must(t, b.Handle("flaky", func(ctx context.Context, ev *Event) (Status, error) {
					if flaky.Add(1) < 3 {
						return Status{}, errors.New("not yet")
					}
					return Active(""), nil
				}, On{Fields: []string{"x"}}))
				must(t, b.Handle("stubborn", func(ctx context.Context, ev *Event) (Status, error) {
					if stubborn.Add(1) < 2 {
						return Status{}, errors.New("no")
					}
					return Status{}, Permanent(errors.New("never"))
				}, On{Fields: []string{"y"}}))
				if withRun {
					stop := run(t, b)
					defer func() { must(t, stop()) }()
					synctest.Wait() // Run is running
				}
				must(t, b.Observe(t.Context(), podKey, map[string]any{"x": 1, "y": 1}))
				must(t, b.Wait(t.Context()))
				if flaky.Load() != 1 {
					t.Fatalf("after Wait flaky ran %d times, want 1 (its retry is later)", flaky.Load())
				}
				start := time.Now()
				must(t, b.Settle(t.Context()))
				if flaky.Load() != 3 || stubborn.Load() != 2 {
					t.Fatalf("after Settle flaky ran %d, stubborn %d times; want 3 and 2", flaky.Load(), stubborn.Load())
				}
				if took := time.Since(start); took < 3*time.Second || took > 3*time.Second+2*settlePoll {
					t.Fatalf("Settle returned after %v, want when the retries were due (1 s, then 2 s)", took)
				}
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil)
		must(t, b.Handle("never", func(ctx context.Context, ev *Event) (Status, error) {
			return Status{}, errors.New("down")
		}, On{}))
		stop := run(t, b)
		defer func() { must(t, stop()) }()
		must(t, b.Observe(t.Context(), podKey, map[string]any{"z": 1}))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := b.Settle(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Settle with a handler that keeps failing = %v, want the deadline", err)
		}
	})
}

// TestRunArmsEarlierRetries: a failure met by Wait before Run started is
// retried once Run runs, though no new state arrives.
func TestRunArmsEarlierRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Backoff: Backoff{Initial: time.Second, Jitter: -1}})
		var n atomic.Int32
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if n.Add(1) < 2 {
				return Status{}, errors.New("not yet")
			}
			return Active(""), nil
		}, On{}))
		must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
		must(t, b.Wait(t.Context()))
		stop := run(t, b)
		defer func() { must(t, stop()) }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n.Load() != 2 {
			t.Fatalf("handler ran %d times, want 2 (its retry under Run)", n.Load())
		}
	})
}

// failingSaves is a MemoryStore whose first fail Saves fail.
type failingSaves struct {
	MemoryStore
	mu         sync.Mutex
	fail, good int
}

func (s *failingSaves) Save(ctx context.Context, key Key, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("store down")
	}
	s.good++
	return s.MemoryStore.Save(ctx, key, data)
}

func (s *failingSaves) goodSaves() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.good
}

// A failed write of a record is a failure like a handler's: Settle waits
// for its retry, before Run as under it, and Run arms the retry of one met
// before it started (rule 27). Settle returned at once, with the record
// unsaved, when the pass had run before Run took over; and nothing
// retried it.
func TestSettleWaitsForStoreRetries(t *testing.T) {
	for _, withRun := range []bool{true, false} {
		t.Run(map[bool]string{true: "with Run", false: "without Run"}[withRun], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &failingSaves{fail: 2}
				b := newBus(t, &Options{Store: store, Backoff: Backoff{Initial: time.Second, Jitter: -1}})
				var runs atomic.Int32
				must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
					runs.Add(1)
					return Active(""), nil
				}, On{}))
				must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
				must(t, b.Wait(t.Context())) // the pass, before Run: its Save fails
				if withRun {
					stop := run(t, b)
					defer func() { must(t, stop()) }()
					synctest.Wait() // Run is running
				}
				must(t, b.Settle(t.Context()))
				if got := store.goodSaves(); got != 1 {
					t.Fatalf("Settle returned with %d good saves, want 1: the failed write was not retried", got)
				}
				if runs.Load() != 1 {
					t.Fatalf("handler ran %d times, want 1: a failed write re-runs no handler", runs.Load())
				}
			})
		})
	}
}

// Without Run, a Wait made while a Dispatch call holds a key dispatches
// the state observed meanwhile once the call returns, rather than waiting
// until its context ends.
func TestWaitWithoutRunWhileDispatchHoldsKey(t *testing.T) {
	b := newBus(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []string
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		seen = append(seen, img)
		mu.Unlock()
		if img == "1" {
			close(started)
			<-release
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	ctx := context.Background()
	key := keyNamed("a")
	dispatched := make(chan error, 1)
	go func() { dispatched <- b.Dispatch(ctx, key, doc("a", "1")) }()
	<-started
	must(t, b.Observe(ctx, key, doc("a", "2")))
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- b.Wait(wctx) }()
	time.Sleep(20 * time.Millisecond) // let Wait find the key busy
	close(release)
	must(t, <-dispatched)
	if err := <-waited; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[1] != "2" {
		t.Errorf("handled %v, want [1 2]", seen)
	}
}
