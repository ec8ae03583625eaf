package opbus

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestDispatchOwnKeyFromHandlerUnderWait: before Run, a pass that Wait
// makes of an observed state is a pass of its key too: a handler that
// dispatches its own object gets an error at once, and nothing is
// queued. (Before, the call waited for the pass it was made from: for
// ever without a deadline, and its state stayed queued.)
func TestDispatchOwnKeyFromHandlerUnderWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{})
		errs := make(chan error, 4)
		var h recorder
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			h.handle(ctx, ev)
			if _, again := ev.Object()["again"]; !again {
				errs <- b.Dispatch(ctx, podKey, map[string]any{"again": true})
			}
			return Status{}, nil
		}, On{}))
		must(t, b.Observe(t.Context(), podKey, map[string]any{"first": true}))
		must(t, b.Wait(t.Context()))
		if got := <-errs; got == nil || !strings.Contains(got.Error(), "inside a pass of that object") {
			t.Fatalf("Dispatch of its own key from a handler of a pass Wait makes = %v, want an error at once", got)
		}
		if n := h.count(); n != 1 {
			t.Fatalf("the handler ran %d times, want 1: the refused call queues nothing", n)
		}
	})
}

// TestDispatchWithContextOfEndedPass: a handler's context kept by a
// goroutine it started holds nothing once the pass has ended: a Dispatch
// with it waits for the key's pass under way, as any call does, and
// handles its state. (Before, it was refused as if made from inside that
// pass, its state not queued: for a key dispatched with that context, or
// for whichever key the goroutine of Run that made the pass held next.)
func TestDispatchWithContextOfEndedPass(t *testing.T) {
	a := Key{Kind: "X", Name: "a"}
	// Through a Dispatch call's pass.
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{})
		kept := make(chan context.Context, 1)
		gate := make(chan struct{})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			switch n, _ := Get[int64](ev.Object(), "n"); n {
			case 1:
				kept <- ctx
			case 2:
				<-gate
			}
			return Status{}, nil
		}, On{}))
		must(t, b.Dispatch(t.Context(), a, map[string]any{"n": 1}))
		stale := <-kept
		go func() { must(t, b.Dispatch(t.Context(), a, map[string]any{"n": 2})) }()
		synctest.Wait() // a is held by the second call, in its handler
		res := make(chan error, 1)
		go func() { res <- b.Dispatch(stale, a, map[string]any{"n": 3}) }()
		synctest.Wait()
		close(gate)
		if err := <-res; err != nil {
			t.Fatalf("Dispatch with the context of a pass that has ended = %v, want nil", err)
		}
	})
	// Through a pass of Run's goroutines, which go on to other keys.
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			b := newBus(t, &Options{Workers: 1, Writers: 1})
			c := Key{Kind: "X", Name: "c"}
			cRunning, cGate := make(chan struct{}), make(chan struct{})
			res := make(chan error, 1)
			var once sync.Once
			must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
				switch {
				case ev.Key == a:
					go func() {
						<-cRunning
						res <- b.Dispatch(ctx, c, map[string]any{"from": "a"})
					}()
				case ev.Object()["from"] == nil:
					once.Do(func() { close(cRunning) })
					<-cGate
				}
				return Status{}, nil
			}, On{}))
			stop := run(t, b)
			must(t, b.Observe(t.Context(), a, map[string]any{"x": 1}))
			synctest.Wait()
			must(t, b.Observe(t.Context(), c, map[string]any{"x": 1}))
			synctest.Wait() // c's handler runs; the call from a's goroutine waits for it
			close(cGate)
			if err := <-res; err != nil {
				t.Fatalf("Dispatch of c with the context of a's ended pass, while Run holds c = %v, want nil", err)
			}
			must(t, stop())
		})
	}
}

// TestDispatchCycleThroughOtherKeys: two objects' handlers that dispatch
// each other at once, each holding its own key, wait for each other: the
// bus does not detect such a cycle (it is not a call waiting for its own
// pass). Each call ends with its context or, as here without a deadline,
// when Run stops: with ErrClosed, its state saved as pending, and Run
// returns without waiting for the shutdown timeout.
func TestDispatchCycleThroughOtherKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Workers: 2, ShutdownTimeout: time.Hour})
		a, c := Key{Kind: "X", Name: "a"}, Key{Kind: "X", Name: "c"}
		var both sync.WaitGroup
		both.Add(2)
		errs := make(chan error, 2)
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if _, ok := ev.Object()["from"]; ok {
				return Status{}, nil
			}
			both.Done()
			both.Wait() // both keys held
			other := a
			if ev.Key == a {
				other = c
			}
			errs <- b.Dispatch(ctx, other, map[string]any{"from": ev.Key.Name})
			return Status{}, nil
		}, On{}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), a, map[string]any{}))
		must(t, b.Observe(t.Context(), c, map[string]any{}))
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(errs); n != 0 {
			t.Fatalf("%d of the two calls that wait for each other returned before Run stopped, want 0", n)
		}
		start := time.Now()
		must(t, stop())
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("Run stopped after %v, want at once", waited)
		}
		for range 2 {
			if err := <-errs; !errors.Is(err, ErrClosed) {
				t.Fatalf("a call of the cycle returned %v at Run's stop, want an error wrapping ErrClosed", err)
			}
		}
	})
}
