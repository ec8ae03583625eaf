package wake

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tok := NewToken()
		tok.Offer()
		tok.Offer() // the same chance: never blocks
		if got := len(tok); got != 1 {
			t.Fatalf("got %d tokens, want 1", got)
		}
		tok.Wait(nil) // takes it
		stop := make(chan struct{})
		woke := false
		go func() {
			tok.Wait(stop)
			woke = true
		}()
		synctest.Wait()
		if woke {
			t.Fatalf("Wait returned with no token and stop open")
		}
		close(stop)
		synctest.Wait()
		if !woke {
			t.Fatalf("Wait did not return when stop closed")
		}
	})
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(context.Background(), time.Minute, time.AfterFunc); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		if got := time.Since(start); got != time.Minute {
			t.Errorf("slept %v, want %v", got, time.Minute)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := Sleep(ctx, time.Hour, time.AfterFunc); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want %v", err, context.DeadlineExceeded)
		}
	})
}

func TestWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		if Within(done, time.Second) {
			t.Fatalf("got true with done open, want false")
		}
		time.AfterFunc(time.Second, func() { close(done) })
		if !Within(done, time.Minute) {
			t.Errorf("got false with done closed after a second, want true")
		}
	})
}
