package opbus

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/opbus/opbus/internal/backoff"
)

func TestRetryThenSuccessCommitsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Backoff: Backoff{Initial: time.Second, Factor: 2, Max: time.Minute, Jitter: 0.01}})
		fails := 2
		var attempts []int
		var times []time.Duration
		start := time.Now()
		must(t, b.Handle("flaky", func(ctx context.Context, ev *Event) (Status, error) {
			attempts = append(attempts, ev.Attempt)
			times = append(times, time.Since(start))
			if fails > 0 {
				fails--
				return Status{}, errors.New("not yet")
			}
			return Active("done"), nil
		}, On{Fields: []string{"spec"}}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if len(attempts) != 3 || attempts[0] != 1 || attempts[2] != 3 {
			t.Fatalf("attempts = %v, want [1 2 3]", attempts)
		}
		// backoff: ~1s then ~2s
		if d := times[1] - times[0]; d < 990*time.Millisecond || d > 1010*time.Millisecond {
			t.Errorf("first retry after %v, want ~1s", d)
		}
		if d := times[2] - times[1]; d < 1980*time.Millisecond || d > 2020*time.Millisecond {
			t.Errorf("second retry after %v, want ~2s", d)
		}
		_, slots, _ := b.Status(t.Context(), podKey)
		if slots["flaky"] != Active("done") {
			t.Errorf("slot = %v", slots["flaky"])
		}
		// committed: observing the same value again runs nothing
		must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
		time.Sleep(time.Minute)
		synctest.Wait()
		if len(attempts) != 3 {
			t.Errorf("ran again after success: %v", attempts)
		}
		if s := b.Stats(); s.Retried != 2 || s.Failed != 2 || s.Ran != 3 {
			t.Errorf("stats = %+v", s)
		}
		must(t, stop())
	})
}

func TestFailedSlotShowsErrorUntilSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Backoff: Backoff{Initial: time.Second, Jitter: 0.01}})
		var fail atomic.Bool
		fail.Store(true)
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if fail.Load() {
				return Status{}, errors.New("database unreachable")
			}
			return Status{}, nil
		}, On{}))
		must(t, b.Handle("w", func(ctx context.Context, ev *Event) (Status, error) {
			return Waiting("custom status kept on error"), errors.New("x")
		}, On{}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
		synctest.Wait()
		st, slots, _ := b.Status(t.Context(), podKey)
		if st.Level != LevelError || slots["h"] != ErrorStatus("database unreachable") || slots["w"] != Waiting("custom status kept on error") {
			t.Fatalf("status %v, slots %v", st, slots)
		}
		fail.Store(false)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		_, slots, _ = b.Status(t.Context(), podKey)
		if _, ok := slots["h"]; ok {
			t.Errorf("success returning the zero Status should clear the slot: %v", slots)
		}
		must(t, stop())
	})
}

func TestRetryAfterAndPermanent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Backoff: Backoff{Initial: time.Hour}})
		var permRuns, laterRuns int
		var laterAt []time.Duration
		start := time.Now()
		must(t, b.Handle("perm", func(ctx context.Context, ev *Event) (Status, error) {
			permRuns++
			return Blocked("bad spec"), Permanent(errors.New("spec.size must be positive"))
		}, On{Fields: []string{"spec"}}))
		must(t, b.Handle("later", func(ctx context.Context, ev *Event) (Status, error) {
			laterRuns++
			laterAt = append(laterAt, time.Since(start))
			if laterRuns == 1 {
				return Status{}, RetryAfter(5*time.Second, errors.New("warming up"))
			}
			return Status{}, nil
		}, On{Fields: []string{"spec"}}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": map[string]any{"size": -1}}))
		time.Sleep(time.Minute)
		synctest.Wait()
		if permRuns != 1 {
			t.Errorf("a permanent failure was retried: %d runs", permRuns)
		}
		if laterRuns != 2 || laterAt[1]-laterAt[0] != 5*time.Second {
			t.Errorf("RetryAfter: runs %d at %v, want 2, 5s apart", laterRuns, laterAt)
		}
		_, slots, _ := b.Status(t.Context(), podKey)
		if slots["perm"] != Blocked("bad spec") {
			t.Errorf("slot = %v", slots["perm"])
		}
		must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": map[string]any{"size": 3}}))
		synctest.Wait()
		if permRuns != 2 {
			t.Errorf("a permanent failure must run again when the value changes: %d runs", permRuns)
		}
		must(t, stop())
	})
	if !errors.Is(Permanent(errors.New("x")), ErrPermanent) || Permanent(nil) != nil {
		t.Error("Permanent: wrong wrapping")
	}
	if d, ok := backoff.Asked(RetryAfter(time.Second, nil)); !ok || d != time.Second {
		t.Error("RetryAfter(nil) should still ask for a delay")
	}
}

func TestPanicIsIsolatedAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Backoff: Backoff{Initial: time.Second}})
		runs := 0
		var other recorder
		must(t, b.Handle("panicky", func(ctx context.Context, ev *Event) (Status, error) {
			runs++
			if runs == 1 {
				var s []int
				_ = s[runs] // a real runtime panic: index out of range
			}
			return Active("recovered"), nil
		}, On{}))
		must(t, b.Handle("other", other.handle, On{}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if runs != 2 || other.count() != 1 {
			t.Fatalf("runs %d, other %d: want the panicking handler retried once and the other run once", runs, other.count())
		}
		if s := b.Stats(); s.Panicked != 1 {
			t.Errorf("stats = %+v", s)
		}
		must(t, stop())
	})
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Second, Factor: 2, Max: 10 * time.Second, Jitter: 0.1}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 50: 10 * time.Second} {
		for range 20 {
			got := b.delay(n)
			if got < want*9/10 || got > want*11/10 {
				t.Fatalf("Delay(%d) = %v, want %v ±10%%", n, got, want)
			}
		}
	}
	if d := (Backoff{}).withDefaults().delay(1); d < 800*time.Millisecond || d > 1200*time.Millisecond {
		t.Errorf("default first delay %v, want 1s ±20%%", d)
	}
}

// TestFailureEndsWhenValueReturns: a handler that failed on a new value,
// whose value then returns to the one it last handled, has nothing left to
// do: it does not run, and its slot shows its last success again.
func TestFailureEndsWhenValueReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Backoff: Backoff{Initial: time.Minute}})
		var runs []any
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			runs = append(runs, ev.New["v"])
			if ev.New["v"] == "two" {
				return Status{}, errors.New("cannot do two")
			}
			return Active("did " + ev.New["v"].(string)), nil
		}, On{Fields: []string{"v"}}))
		stop := run(t, b)
		for _, v := range []string{"one", "two", "one"} {
			must(t, b.Observe(t.Context(), podKey, map[string]any{"v": v}))
			synctest.Wait()
		}
		_, slots, _ := b.Status(t.Context(), podKey)
		if slots["h"] != Active("did one") {
			t.Errorf("slot = %v, want the status of the last success", slots["h"])
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if len(runs) != 2 {
			t.Errorf("runs = %v, want [one two]: no retry once the value is back", runs)
		}
		must(t, stop())
	})
}
