package opbus

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// listingStore is a MemoryStore whose Keys honours its context, as a
// FileStore's or an API server's listing does, fails its first fails
// calls, and, with hang set, blocks until hang is closed.
type listingStore struct {
	*MemoryStore
	fails atomic.Int32
	calls atomic.Int32
	hang  chan struct{}
}

func (s *listingStore) Keys(ctx context.Context) ([]Key, error) {
	s.calls.Add(1)
	if s.hang != nil {
		<-s.hang // ignores ctx
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.fails.Add(-1) >= 0 {
		return nil, errors.New("list: connection refused")
	}
	return s.MemoryStore.Keys(ctx)
}

// leavePodPending runs a bus on store that stops with podKey's state
// pending (its only worker held by another object's handler).
func leavePodPending(t *testing.T, store Store) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: time.Second})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.Key.Name == "gate" {
				<-ctx.Done()
				return Status{}, ctx.Err()
			}
			return Status{}, nil
		}, On{}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), Key{Kind: "X", Name: "gate"}, map[string]any{}))
		synctest.Wait()
		must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
		must(t, stop())
	})
}

// namesBus is a bus on store whose handler notes the names it handles.
func namesBus(t *testing.T, store Store) (*Bus, func() string) {
	var mu sync.Mutex
	var handled []string
	b := newBus(t, &Options{Store: store, Workers: 1})
	must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
		mu.Lock()
		handled = append(handled, ev.Key.Name)
		mu.Unlock()
		return Status{}, nil
	}, On{}))
	return b, func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(handled, ",")
	}
}

// TestWaitCancelledBeforeRunLeavesListingToRun: a Wait before Run whose
// context has ended cannot list the store; it says so, and the next Wait
// or Run lists it. (Before, it returned nil and marked the store listed,
// so Run never handled the states an earlier run left pending.)
func TestWaitCancelledBeforeRunLeavesListingToRun(t *testing.T) {
	store := &listingStore{MemoryStore: NewMemoryStore()}
	leavePodPending(t, store)
	synctest.Test(t, func(t *testing.T) {
		b, handled := namesBus(t, store)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait with an ended context before Run, while the store has pending states = %v, want an error wrapping context.Canceled", err)
		}
		stop := run(t, b)
		must(t, b.Wait(t.Context()))
		got := handled()
		must(t, stop())
		if !strings.Contains(got, podKey.Name) {
			t.Fatalf("Run after a Wait that could not list the store handled %q, want the pending state of %s", got, podKey.Name)
		}
	})
}

// TestRunRetriesFailedListing: under Run, a listing of the store that
// fails is tried again with backoff, and Settle returns only once the
// pending states it finds are handled. (Before, one failed listing was logged and the pending states
// were left in the store for the whole run.)
func TestRunRetriesFailedListing(t *testing.T) {
	store := &listingStore{MemoryStore: NewMemoryStore()}
	leavePodPending(t, store)
	store.fails.Store(2)
	store.calls.Store(0)
	synctest.Test(t, func(t *testing.T) {
		b, handled := namesBus(t, store)
		stop := run(t, b)
		defer func() { must(t, stop()) }()
		synctest.Wait() // Run's first listing failed
		must(t, b.Settle(t.Context()))
		got := handled()
		if !strings.Contains(got, podKey.Name) || store.calls.Load() != 3 {
			t.Fatalf("with a listing that fails twice, Settle under Run returned having handled %q after %d listings; want %s after 3", got, store.calls.Load(), podKey.Name)
		}
	})
}

// TestRunStopsWhileListingHangs: Run returns when its context ends even if
// the store's listing ignores its context and hangs (rule 16: Run always
// returns); a Dispatch meanwhile is handled. (Before, Run listed the
// store before it watched its context, and hung with it.)
func TestRunStopsWhileListingHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &listingStore{MemoryStore: NewMemoryStore(), hang: make(chan struct{})}
		defer close(store.hang)
		b, handled := namesBus(t, store)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		synctest.Wait()
		must(t, b.Dispatch(t.Context(), podKey, map[string]any{"a": 1}))
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			must(t, err)
		default:
			t.Fatal("Run did not return after its context ended, while the store's listing hung")
		}
		if got := handled(); got != podKey.Name {
			t.Fatalf("handled %q, want %s", got, podKey.Name)
		}
	})
}
