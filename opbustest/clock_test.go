package opbustest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/opbustest"
)

// TestScheduleOnTestClock: a handler due every minute runs once a minute
// over ten minutes of a test clock, which take milliseconds of wall time;
// a failing handler's retry waits for its backoff on the same clock.
func TestScheduleOnTestClock(t *testing.T) {
	// synctest only to know that Run has started (synctest.Wait): the
	// bus's time is the test clock's, not the bubble's.
	synctest.Test(t, testScheduleOnTestClock)
}

func testScheduleOnTestClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	clock := opbustest.NewClock(start)
	bus, err := opbus.New(&opbus.Options{Clock: clock, Backoff: opbus.Backoff{Initial: 10 * time.Second, Jitter: -1}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ticks []time.Time
	fails := 1
	var tries []time.Time
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(bus.Handle("cron", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		mu.Lock()
		defer mu.Unlock()
		ticks = append(ticks, clock.Now())
		return opbus.Active(""), nil
	}, opbus.On{Every: time.Minute}))
	must(bus.Handle("flaky", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		mu.Lock()
		defer mu.Unlock()
		tries = append(tries, clock.Now())
		if fails > 0 {
			fails--
			return opbus.Status{}, errors.New("not yet")
		}
		return opbus.Active(""), nil
	}, opbus.On{Fields: []string{"spec"}}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bus.Run(ctx) }()
	synctest.Wait() // Run has started: its passes arm their timers
	key := opbus.Key{Kind: "CronJob", Namespace: "default", Name: "nightly"}
	must(bus.Observe(ctx, key, map[string]any{"spec": map[string]any{"schedule": "*/1 * * * *"}}))
	must(bus.Wait(ctx))
	if n := clock.Pending(); n != 2 {
		t.Fatalf("after the create, %d timers armed on the test clock; want 2 (the schedule's, the retry's)", n)
	}
	clock.Advance(10 * time.Second) // the failed handler's backoff
	must(bus.Wait(ctx))
	clock.Advance(50 * time.Second)
	must(bus.Wait(ctx))
	for range 9 {
		clock.Advance(time.Minute)
		must(bus.Wait(ctx))
	}
	cancel()
	must(<-done)

	mu.Lock()
	defer mu.Unlock()
	if len(ticks) != 11 {
		t.Fatalf("the handler due every minute ran %d times over ten minutes (at %v), want 11: once at the create, then once a minute", len(ticks), ticks)
	}
	for i, at := range ticks[1:] {
		if want := start.Add(time.Duration(i+1) * time.Minute); at.Before(want) || at.After(want.Add(time.Second)) {
			t.Errorf("run %d at %v, want at %v", i+2, at, want)
		}
	}
	if len(tries) != 2 || tries[1].Sub(tries[0]) != 10*time.Second {
		t.Errorf("the failing handler ran at %v, want twice, 10s apart (its backoff, on the test clock)", tries)
	}
}
