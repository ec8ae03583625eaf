package backoff

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	p := Policy{Initial: time.Second, Factor: 2, Max: 10 * time.Second, Jitter: 0.1}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 50: 10 * time.Second} {
		for range 20 {
			if got := p.Delay(n); got < want*9/10 || got > want*11/10 {
				t.Fatalf("Delay(%d) = %v; want %v ±10%%", n, got, want)
			}
		}
	}
	if got := (Policy{Initial: time.Second, Factor: 3, Max: time.Hour}).Delay(3); got != 9*time.Second {
		t.Errorf("Delay(3) without jitter = %v; want 9s", got)
	}
}

func TestWithDefaults(t *testing.T) {
	for _, c := range []struct {
		in, want Policy
	}{
		{Policy{}, Policy{Initial: time.Second, Max: 5 * time.Minute, Factor: 2, Jitter: 0.2}},
		{Policy{Initial: time.Hour, Jitter: -1}, Policy{Initial: time.Hour, Max: time.Hour, Factor: 2, Jitter: 0}},
		{Policy{Initial: 2 * time.Second, Max: time.Minute, Factor: 1.5, Jitter: 0.5}, Policy{Initial: 2 * time.Second, Max: time.Minute, Factor: 1.5, Jitter: 0.5}},
	} {
		if got := c.in.WithDefaults(); got != c.want {
			t.Errorf("%+v.WithDefaults() = %+v; want %+v", c.in, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string // "" for none
	}{
		{Policy{}, ""},
		{Policy{Initial: -1}, "x.Initial is -1ns"},
		{Policy{Max: -1}, "x.Max is -1ns"},
		{Policy{Factor: 0.5}, "x.Factor is 0.5"},
		{Policy{Jitter: 1}, "x.Jitter is 1"},
		{Policy{Initial: time.Minute, Max: time.Second}, "x.Max (1s) is below Initial (1m0s)"},
	} {
		err := c.p.Check("x")
		if (c.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("Check(%+v) = %v; want %q", c.p, err, c.want)
		}
	}
}

func TestRetry(t *testing.T) {
	p := Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, Factor: 2}
	var calls int
	var waits []time.Duration
	p.Retry(context.Background(), func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}, func(err error, d time.Duration) { waits = append(waits, d) })
	if calls != 3 || len(waits) != 2 || waits[0] != time.Millisecond || waits[1] != 2*time.Millisecond {
		t.Errorf("calls %d, waits %v; want 3 calls, waits [1ms 2ms]", calls, waits)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	p = Policy{Initial: time.Hour, Max: time.Hour, Factor: 1}
	p.Retry(ctx, func() error { calls++; return errors.New("never") }, func(error, time.Duration) { cancel() })
	if calls != 1 {
		t.Errorf("after ctx ended during the wait: %d calls; want 1, and Retry to return", calls)
	}
}
