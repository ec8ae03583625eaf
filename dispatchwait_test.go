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

// TestDispatchWaitHonoursContext: a Dispatch call waiting for its busy key
// returns when its context ends, with the context's error, and its state
// is not lost: Run handles it once the key is let go. (On the sync.Cond the
// call waited on before, it was still blocked long after its deadline.)
func TestDispatchWaitHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Workers: 1})
		release := make(chan struct{})
		var seen []string
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			img, _ := Get[string](ev.Object(), "spec.image")
			seen = append(seen, img)
			if img == "slow" {
				<-release
			}
			return Status{}, nil
		}, On{Fields: []string{"spec.image"}}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": map[string]any{"image": "slow"}}))
		synctest.Wait() // the slow pass holds the key

		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := b.Dispatch(ctx, podKey, map[string]any{"spec": map[string]any{"image": "next"}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Dispatch on a busy key with a 200ms deadline = %v, want an error wrapping context.DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != 200*time.Millisecond {
			t.Fatalf("Dispatch returned after %v, want at its deadline (200ms)", waited)
		}
		close(release)
		must(t, b.Wait(t.Context()))
		if got := strings.Join(seen, ","); got != "slow,next" {
			t.Fatalf("handled %s, want slow,next: the state of the call that gave up stays queued", got)
		}
		must(t, stop())
	})
}

// TestDispatchOwnKeyFromHandler: a handler that dispatches its own object
// gets an error at once, with Run and without, instead of waiting for its
// own pass for ever; so does one that does it through another object's
// handler.
func TestDispatchOwnKeyFromHandler(t *testing.T) {
	for _, withRun := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			b := newBus(t, &Options{})
			errs := make(chan error, 4)
			must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
				errs <- b.Dispatch(ctx, podKey, map[string]any{"again": true})
				return Status{}, nil
			}, On{Types: []EventType{Create}}))
			var stop func() error
			if withRun {
				stop = run(t, b)
				must(t, b.Observe(t.Context(), podKey, map[string]any{"direct": true}))
				synctest.Wait()
			} else {
				must(t, b.Dispatch(t.Context(), podKey, map[string]any{"direct": true}))
			}
			got := <-errs
			if got == nil || !strings.Contains(got.Error(), "inside a pass of that object") {
				t.Fatalf("run=%v: Dispatch of its own key from its handler = %v, want an error at once", withRun, got)
			}
			if stop != nil {
				must(t, stop())
			}
		})
	}
	// Through another object: pod's handler dispatches other, whose handler
	// dispatches pod.
	other := Key{Kind: "Pod", Namespace: "default", Name: "other"}
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{})
		errs := make(chan error, 4)
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.Key == podKey {
				if err := b.Dispatch(ctx, other, map[string]any{"n": 1}); err != nil {
					errs <- err
				}
			} else {
				errs <- b.Dispatch(ctx, podKey, map[string]any{"n": 2})
			}
			return Status{}, nil
		}, On{Types: []EventType{Create}}))
		must(t, b.Dispatch(t.Context(), podKey, map[string]any{"n": 0}))
		if got := <-errs; got == nil || !strings.Contains(got.Error(), "inside a pass of that object") {
			t.Fatalf("Dispatch of pod from other's handler, itself from pod's = %v, want an error at once", got)
		}
	})
}

// TestWaitRightAfterRunHandlesPending: Wait and Settle called right after
// `go bus.Run(ctx)` return only once the states an earlier run left
// pending in the store are handled, whichever of Run and Wait starts
// first. (Run was marked running before it listed the store, and a Wait
// before Run did not look at the store at all.)
func TestWaitRightAfterRunHandlesPending(t *testing.T) {
	for _, settle := range []bool{false, true} {
		store := NewMemoryStore()
		var mu sync.Mutex // passes of two keys may run at once (Wait's and Run's)
		var handled []string
		build := func(t *testing.T, gate bool) *Bus {
			b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: time.Second})
			must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
				if ev.Key.Name == "gate" && gate {
					<-ctx.Done()
					return Status{}, ctx.Err()
				}
				mu.Lock()
				handled = append(handled, ev.Key.Name)
				mu.Unlock()
				return Status{}, nil
			}, On{}))
			return b
		}
		synctest.Test(t, func(t *testing.T) {
			b := build(t, true)
			stop := run(t, b)
			must(t, b.Observe(t.Context(), Key{Kind: "X", Name: "gate"}, map[string]any{}))
			synctest.Wait() // the gate holds the only worker
			must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
			must(t, stop()) // podKey's state is saved as pending
		})
		handled = nil
		synctest.Test(t, func(t *testing.T) {
			b := build(t, false)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- b.Run(ctx) }()
			var err error
			if settle {
				err = b.Settle(t.Context())
			} else {
				err = b.Wait(t.Context())
			}
			must(t, err)
			mu.Lock()
			got := strings.Join(handled, ",")
			mu.Unlock()
			cancel()
			must(t, <-done)
			if !strings.Contains(got, podKey.Name) {
				t.Fatalf("settle=%v: when Wait returned right after go Run, handled %q: want the pending state of %s handled", settle, got, podKey.Name)
			}
		})
	}
}

// TestWaitCountsDispatchUnderWay: Wait does not return while a Dispatch
// call's pass is under way ("no observed state queued or being
// dispatched"): the key a Dispatch call holds counts as pending. (acquire
// did not recount, so Wait returned nil at once.)
func TestWaitCountsDispatchUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil)
		release := make(chan struct{})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			<-release
			return Status{}, nil
		}, On{}))
		must(t, b.Wait(t.Context())) // nothing to do yet: the store is looked at
		done := make(chan error, 1)
		go func() { done <- b.Dispatch(t.Context(), podKey, map[string]any{"a": 1}) }()
		synctest.Wait() // the handler runs
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := b.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait while a Dispatch pass runs = %v, want it to wait (context.DeadlineExceeded)", err)
		}
		close(release)
		must(t, <-done)
		must(t, b.Wait(t.Context()))
	})
}
