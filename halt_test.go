package opbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestHaltCancelsAtOnce: a Run context cancelled with a cause wrapping
// ErrHalt cancels the running handler straight away (not after
// ShutdownTimeout), with that cause, and the bus writes nothing more: not
// the handler's result, not its status, not the queued state of another
// key. A handler that ignores its context is abandoned after a second.
func TestHaltCancelsAtOnce(t *testing.T) {
	for _, obeys := range []bool{true, false} {
		t.Run(fmt.Sprintf("handler obeys ctx %v", obeys), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &writeCounter{}
				sink := &recordingSink{}
				var logs bytes.Buffer // slog's handler serializes its writes
				b := newBus(t, &Options{Store: store, Sink: sink, Workers: 1, ShutdownTimeout: time.Hour,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				release := make(chan struct{})
				var cause atomic.Value
				var returned atomic.Bool
				must(t, b.Handle("block", func(ctx context.Context, ev *Event) (Status, error) {
					if obeys {
						<-ctx.Done()
						cause.Store(context.Cause(ctx))
					} else {
						<-release
					}
					returned.Store(true)
					return Blocked("interrupted"), ctx.Err()
				}, On{Fields: []string{"x"}}))
				ctx, cancel := context.WithCancelCause(context.Background())
				done := make(chan error, 1)
				go func() { done <- b.Run(ctx) }()
				must(t, b.Observe(t.Context(), podKey, map[string]any{"x": 1}))
				other := Key{Kind: "Pod", Namespace: "default", Name: "other"}
				must(t, b.Observe(t.Context(), other, map[string]any{"x": 1}))
				synctest.Wait() // the handler blocks on podKey; other waits for the worker
				writes, sunk := store.writes.Load(), len(sink.calls)

				start := time.Now()
				lost := fmt.Errorf("lease lost: %w", ErrHalt)
				cancel(lost)
				must(t, <-done)
				took := time.Since(start)
				if obeys {
					if took != 0 {
						t.Errorf("Run returned %v after the halt, want at once", took)
					}
					if c, _ := cause.Load().(error); !errors.Is(c, ErrHalt) || c.Error() != lost.Error() {
						t.Errorf("handler's context cause = %v, want %v", c, lost)
					}
				} else if took != abandonAfter {
					t.Errorf("Run returned %v after the halt, want %v (the handler was abandoned)", took, abandonAfter)
				}
				close(release)
				synctest.Wait()
				if !returned.Load() {
					t.Fatal("the handler never returned")
				}
				// halt says which way its bounded wait ended.
				said := map[bool]string{
					true:  "opbus: halted: running handlers cancelled, nothing more written",
					false: "opbus: halted: handlers or store writes ignored their cancelled context",
				}
				if !strings.Contains(logs.String(), said[obeys]) || strings.Contains(logs.String(), said[!obeys]) {
					t.Errorf("the halt logged:\n%s\nwant %q and not %q", logs.String(), said[obeys], said[!obeys])
				}
				if w := store.writes.Load(); w != writes {
					t.Errorf("the halted bus wrote %d more records", w-writes)
				}
				sink.mu.Lock()
				if len(sink.calls) != sunk {
					t.Errorf("the halted bus published %d more statuses: %v", len(sink.calls)-sunk, sink.calls[sunk:])
				}
				sink.mu.Unlock()
				if err := b.Observe(t.Context(), podKey, map[string]any{"x": 2}); !errors.Is(err, ErrClosed) {
					t.Errorf("Observe after a halt = %v, want ErrClosed", err)
				}
			})
		})
	}
}

// stuckStore's Save blocks, ignoring its context, once stuck is set, until
// release is closed.
type stuckStore struct {
	MemoryStore
	calls   atomic.Int32 // Save calls begun
	stuck   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *stuckStore) Save(ctx context.Context, key Key, data []byte) error {
	s.calls.Add(1)
	if s.stuck.Load() {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.MemoryStore.Save(ctx, key, data)
}

// TestHaltWithStuckStoreWrite: a store write that ignores its cancelled
// context does not hang a halt: Run returns once abandonAfter has passed,
// as for a handler that ignores it, and the bus begins no write after that,
// even once the stuck one returns. In real time: a goroutine waiting for a
// mutex is not durably blocked, so a synctest bubble's clock would not move.
func TestHaltWithStuckStoreWrite(t *testing.T) {
	store := &stuckStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(store.release)
	b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: time.Hour})
	var r recorder
	must(t, b.Handle("h", r.handle, On{Fields: []string{"x"}}))
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	store.stuck.Store(true)
	must(t, b.Observe(t.Context(), podKey, map[string]any{"x": 1}))
	<-store.entered // the record's write is under way, and stuck
	store.stuck.Store(false)
	other := Key{Kind: "Pod", Namespace: "default", Name: "other"}
	must(t, b.Observe(t.Context(), other, map[string]any{"x": 1}))

	start := time.Now()
	cancel(fmt.Errorf("lease lost: %w", ErrHalt))
	select {
	case err := <-done:
		must(t, err)
		if took := time.Since(start); took < abandonAfter {
			t.Errorf("Run returned %v after the halt, before abandonAfter (%v), with a write under way", took, abandonAfter)
		}
	case <-time.After(abandonAfter + 30*time.Second):
		t.Fatal("Run did not return after the halt: it waits for a store write that ignores its context")
	}
	calls := store.calls.Load()
	store.release <- struct{}{} // the stuck write returns
	time.Sleep(100 * time.Millisecond)
	if c := store.calls.Load(); c != calls {
		t.Errorf("the halted bus began %d more writes once the stuck one returned", c-calls)
	}
}
