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

// shardRun is a bus under Run in a synctest bubble, with its stop.
type shardRun struct {
	b    *Bus
	stop func() error
}

func startShard(t *testing.T, opts *Options, handle func(b *Bus)) *shardRun {
	t.Helper()
	b := newBus(t, opts)
	handle(b)
	return &shardRun{b: b, stop: run(t, b)}
}

func isKey(k Key) func(Key) bool { return func(x Key) bool { return x == k } }

// storedPending returns the pending states of key's record in store.
func storedPending(t *testing.T, b *Bus, key Key) []pendingState {
	t.Helper()
	rec, err := b.readRecord(context.Background(), key, b.reg.index)
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil {
		return nil
	}
	return rec.States()
}

// TestReleaseWaitsForPass: Release returns only once the pass running for
// a released key has ended and written its record; from then on the key
// is refused at the door and nothing is written for it.
func TestReleaseWaitsForPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &writeCounter{}
		unblock := make(chan struct{})
		var runs atomic.Int32
		s := startShard(t, &Options{Store: store, Workers: 1}, func(b *Bus) {
			must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
				runs.Add(1)
				<-unblock
				return Active("ok"), nil
			}, On{Fields: []string{"x"}}))
		})
		must(t, s.b.Observe(t.Context(), podKey, map[string]any{"x": 1}))
		synctest.Wait()
		done := make(chan error, 1)
		go func() { done <- s.b.Release(t.Context(), isKey(podKey)) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Release returned %v while the key's pass ran, want it to wait", err)
		default:
		}
		close(unblock)
		must(t, <-done)
		if store.writes.Load() == 0 {
			t.Fatal("the pass's record was not written before Release returned")
		}
		writes := store.writes.Load()
		err := s.b.Observe(t.Context(), podKey, map[string]any{"x": 2})
		if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), podKey.String()) {
			t.Errorf("Observe after Release = %v, want ErrNotOwned naming %v", err, podKey)
		}
		if err := s.b.Dispatch(t.Context(), podKey, map[string]any{"x": 2}); !errors.Is(err, ErrNotOwned) {
			t.Errorf("Dispatch after Release = %v, want ErrNotOwned", err)
		}
		if err := s.b.ObserveDelete(t.Context(), podKey, nil); !errors.Is(err, ErrNotOwned) {
			t.Errorf("ObserveDelete after Release = %v, want ErrNotOwned", err)
		}
		other := Key{Kind: "Pod", Namespace: "default", Name: "other"}
		must(t, s.b.Observe(t.Context(), other, map[string]any{"x": 1}))
		synctest.Wait()
		if runs.Load() != 2 {
			t.Errorf("runs = %d, want 2 (the released key's and another key's)", runs.Load())
		}
		if w := store.writes.Load(); w != writes+1 {
			t.Errorf("writes after Release = %d, want 1 (the other key's)", w-writes)
		}
		must(t, s.stop())
	})
}

// TestReleaseAbandonsAtDeadline: when Release's context ends while a
// pass of a released key runs, the pass is abandoned: its handler's
// context is cancelled with a cause wrapping ErrNotOwned, nothing of it is
// written then or afterwards, and its state is saved as pending, which
// the bus that acquires the key handles.
func TestReleaseAbandonsAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &writeCounter{}
		var cause atomic.Value
		var mu sync.Mutex
		var seen []string
		handler := func(name string, block bool) HandlerFunc {
			return func(ctx context.Context, ev *Event) (Status, error) {
				mu.Lock()
				seen = append(seen, name)
				mu.Unlock()
				if block {
					<-ctx.Done()
					cause.Store(context.Cause(ctx))
					return Active("late"), nil // not written: abandoned
				}
				return Active("ok"), nil
			}
		}
		s1 := startShard(t, &Options{Store: store, Workers: 1}, func(b *Bus) {
			must(t, b.Handle("h", handler("one", true), On{Fields: []string{"x"}}))
		})
		// A bus that shares keys says so before it observes them, so that
		// its passes can be cancelled.
		must(t, s1.b.Acquire(t.Context(), func(Key) bool { return true }))
		must(t, s1.b.Observe(t.Context(), podKey, map[string]any{"x": 1}))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := s1.b.Release(ctx, isKey(podKey))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Release = %v, want an error wrapping the deadline", err)
		}
		if c, _ := cause.Load().(error); !errors.Is(c, ErrNotOwned) {
			t.Errorf("the abandoned handler's context cause = %v, want ErrNotOwned", c)
		}
		synctest.Wait()
		pending := storedPending(t, s1.b, podKey)
		if len(pending) != 1 || pending[0].Object["x"] != float64(1) && pending[0].Object["x"] != 1 {
			t.Fatalf("pending states after the abandon = %v, want the abandoned state x=1", pending)
		}
		rec, _ := s1.b.readRecord(t.Context(), podKey, s1.b.reg.index)
		if !rec.Digests[0].isZero() || len(rec.Slots) != 0 {
			t.Errorf("the abandoned pass's result was written: digests %v, slots %v", rec.Digests, rec.Slots)
		}
		must(t, s1.stop())

		s2 := startShard(t, &Options{Store: store}, func(b *Bus) {
			must(t, b.Handle("h", handler("two", false), On{Fields: []string{"x"}}))
		})
		must(t, s2.b.Acquire(t.Context(), isKey(podKey)))
		synctest.Wait()
		mu.Lock()
		got := strings.Join(seen, ",")
		mu.Unlock()
		if got != "one,two" {
			t.Errorf("runs = %s, want one,two (the acquiring bus handles the abandoned state)", got)
		}
		st, _, err := s2.b.Status(t.Context(), podKey)
		must(t, err)
		if st.Message != "ok" {
			t.Errorf("status after the hand-off = %v, want ok", st)
		}
		must(t, s2.stop())
	})
}

// TestReleaseCarriesPendingStates: states queued for a released key, not
// yet handled, are saved in its record; the bus that acquires it handles
// them (the latest, as a restart does) without the key being observed
// again, and its handler runs once for them, not for values the first bus
// handled.
func TestReleaseCarriesPendingStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore()
		other := Key{Kind: "Pod", Namespace: "default", Name: "other"}
		unblock := make(chan struct{})
		var mu sync.Mutex
		var seen []string
		handler := func(name string) HandlerFunc {
			return func(ctx context.Context, ev *Event) (Status, error) {
				if ev.Key == other {
					<-unblock
				}
				mu.Lock()
				seen = append(seen, name+":"+ev.Key.Name+"="+strings.TrimSpace(strings.Trim(ev.Changes[0].New.(string), " ")))
				mu.Unlock()
				return Active("ok"), nil
			}
		}
		s1 := startShard(t, &Options{Store: store, Workers: 1}, func(b *Bus) {
			must(t, b.Handle("h", handler("one"), On{Fields: []string{"x"}}))
		})
		must(t, s1.b.Observe(t.Context(), podKey, map[string]any{"x": "a"}))
		synctest.Wait()
		must(t, s1.b.Observe(t.Context(), other, map[string]any{"x": "a"})) // holds the only worker
		synctest.Wait()
		must(t, s1.b.Observe(t.Context(), podKey, map[string]any{"x": "b"}))
		must(t, s1.b.Observe(t.Context(), podKey, map[string]any{"x": "c"}))
		must(t, s1.b.Release(t.Context(), isKey(podKey)))
		if p := storedPending(t, s1.b, podKey); len(p) != 1 || p[0].Object["x"] != "c" {
			t.Fatalf("pending states saved = %v, want the latest, x=c", p)
		}
		close(unblock)
		synctest.Wait()

		s2 := startShard(t, &Options{Store: store}, func(b *Bus) {
			must(t, b.Handle("h", handler("two"), On{Fields: []string{"x"}}))
		})
		if err := s2.b.Acquire(t.Context(), isKey(podKey)); err != nil {
			t.Fatal(err)
		}
		must(t, s2.b.Acquire(t.Context(), isKey(podKey))) // idempotent
		synctest.Wait()
		mu.Lock()
		got := strings.Join(seen, " ")
		mu.Unlock()
		if want := "one:web=a one:other=a two:web=c"; got != want {
			t.Errorf("runs = %q, want %q", got, want)
		}
		if p := storedPending(t, s2.b, podKey); len(p) != 0 {
			t.Errorf("pending states after the acquiring bus's pass = %v, want none", p)
		}
		// The same value observed again (an adapter's relist) is handled
		// already: its digest came with the record.
		must(t, s2.b.Observe(t.Context(), podKey, map[string]any{"x": "c"}))
		synctest.Wait()
		mu.Lock()
		if n := len(seen); n != 3 {
			t.Errorf("runs after observing the handled value again = %d, want 3", n)
		}
		mu.Unlock()
		must(t, s1.stop())
		must(t, s2.stop())
	})
}

// TestReleaseCarriesTimerGrid: a periodic handler's schedule goes with the
// record: the bus that acquires the key runs it at the next due time of
// the grid the first bus started, not a period after the hand-off; and
// the releasing bus's timer is stopped.
func TestReleaseCarriesTimerGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore()
		start := time.Now()
		var mu sync.Mutex
		var runs []string
		handler := func(name string) HandlerFunc {
			return func(ctx context.Context, ev *Event) (Status, error) {
				mu.Lock()
				runs = append(runs, name+"@"+time.Since(start).String())
				mu.Unlock()
				return Active("ok"), nil
			}
		}
		on := On{Fields: []string{"x"}, Every: time.Minute}
		s1 := startShard(t, &Options{Store: store}, func(b *Bus) { must(t, b.Handle("h", handler("one"), on)) })
		s2 := startShard(t, &Options{Store: store}, func(b *Bus) { must(t, b.Handle("h", handler("two"), on)) })
		must(t, s2.b.Release(t.Context(), isKey(podKey)))
		must(t, s1.b.Observe(t.Context(), podKey, map[string]any{"x": 1}))
		time.Sleep(90 * time.Second) // due once, at 1m
		must(t, s1.b.Release(t.Context(), isKey(podKey)))
		must(t, s2.b.Acquire(t.Context(), isKey(podKey)))
		must(t, s2.b.Observe(t.Context(), podKey, map[string]any{"x": 1})) // the new owner's list
		time.Sleep(150 * time.Second)
		synctest.Wait()
		mu.Lock()
		got := strings.Join(runs, " ")
		mu.Unlock()
		if want := "one@0s one@1m0s two@2m0s two@3m0s two@4m0s"; got != want {
			t.Errorf("runs = %q, want %q", got, want)
		}
		must(t, s1.stop())
		must(t, s2.stop())
	})
}

// TestAcquireResumes: a key released and acquired again by the same bus
// is observed and handled again, from its record: a value handled before
// the release is not handled twice. Nil predicates are refused, and
// both calls refuse once the bus is stopping.
func TestAcquireResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		s := startShard(t, nil, func(b *Bus) { must(t, b.Handle("h", r.handle, On{Fields: []string{"x"}})) })
		must(t, s.b.Observe(t.Context(), podKey, map[string]any{"x": 1}))
		synctest.Wait()
		must(t, s.b.Release(t.Context(), isKey(podKey)))
		if err := s.b.Observe(t.Context(), podKey, map[string]any{"x": 2}); !errors.Is(err, ErrNotOwned) {
			t.Fatalf("Observe of a released key = %v, want ErrNotOwned", err)
		}
		must(t, s.b.Acquire(t.Context(), func(Key) bool { return true }))
		must(t, s.b.Observe(t.Context(), podKey, map[string]any{"x": 1}))
		synctest.Wait()
		if r.count() != 1 {
			t.Errorf("runs after acquiring the key back with its handled value = %d, want 1", r.count())
		}
		must(t, s.b.Observe(t.Context(), podKey, map[string]any{"x": 2}))
		synctest.Wait()
		if r.count() != 2 {
			t.Errorf("runs after a new value = %d, want 2", r.count())
		}
		if err := s.b.Release(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "nil key predicate") {
			t.Errorf("Release(nil) = %v, want an error naming the nil predicate", err)
		}
		if err := s.b.Acquire(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "nil key predicate") {
			t.Errorf("Acquire(nil) = %v, want an error naming the nil predicate", err)
		}
		must(t, s.stop())
		if err := s.b.Release(t.Context(), isKey(podKey)); !errors.Is(err, ErrClosed) {
			t.Errorf("Release after Run = %v, want ErrClosed", err)
		}
		if err := s.b.Acquire(t.Context(), isKey(podKey)); !errors.Is(err, ErrClosed) {
			t.Errorf("Acquire after Run = %v, want ErrClosed", err)
		}
	})
}

// TestReleaseWhileDispatchWaits: a Dispatch call waiting for a key whose
// pass runs when the key is released returns an error wrapping
// ErrNotOwned, and its state is saved with the key's, for the next owner.
func TestReleaseWhileDispatchWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore()
		unblock := make(chan struct{})
		var mu sync.Mutex
		var seen []string
		handler := func(name string) HandlerFunc {
			return func(ctx context.Context, ev *Event) (Status, error) {
				if name == "one" && ev.New["x"] == "a" {
					<-unblock
				}
				mu.Lock()
				seen = append(seen, name+":"+ev.New["x"].(string))
				mu.Unlock()
				return Active("ok"), nil
			}
		}
		s1 := startShard(t, &Options{Store: store}, func(b *Bus) { must(t, b.Handle("h", handler("one"), On{Fields: []string{"x"}})) })
		must(t, s1.b.Observe(t.Context(), podKey, map[string]any{"x": "a"}))
		synctest.Wait()
		dispatched := make(chan error, 1)
		go func() { dispatched <- s1.b.Dispatch(t.Context(), podKey, map[string]any{"x": "b"}) }()
		synctest.Wait()
		released := make(chan error, 1)
		go func() { released <- s1.b.Release(t.Context(), isKey(podKey)) }()
		synctest.Wait()
		close(unblock)
		must(t, <-released)
		if err := <-dispatched; !errors.Is(err, ErrNotOwned) {
			t.Errorf("the waiting Dispatch = %v, want ErrNotOwned", err)
		}
		if p := storedPending(t, s1.b, podKey); len(p) != 1 || p[0].Object["x"] != "b" {
			t.Errorf("pending states = %v, want the Dispatch call's x=b", p)
		}
		s2 := startShard(t, &Options{Store: store}, func(b *Bus) { must(t, b.Handle("h", handler("two"), On{Fields: []string{"x"}})) })
		must(t, s2.b.Acquire(t.Context(), isKey(podKey)))
		synctest.Wait()
		mu.Lock()
		if got := strings.Join(seen, " "); got != "one:a two:b" {
			t.Errorf("runs = %q, want \"one:a two:b\"", got)
		}
		mu.Unlock()
		must(t, s1.stop())
		must(t, s2.stop())
	})
}

// TestReleasedKeyStillRelates: a key the bus released is refused at the
// door, and queues nothing of its own, but its changes (a new state, its
// deletion) still reach the related views of the objects the bus owns
// that it relates to: another bus handles it, and this one's handlers of
// those objects see it change.
func TestReleasedKeyStillRelates(t *testing.T) {
	b, r, observe := relatedBus(t, "memory", "related.Deployment[*].status.readyReplicas")
	must(t, b.Release(t.Context(), func(k Key) bool { return k.Kind == "Deployment" }))
	observe(appKey("shop"), webAppDoc("shop", 1))
	for _, ready := range []int{1, 2, -1} {
		var err error
		if ready < 0 {
			err = b.ObserveDelete(t.Context(), deployKey("web"), deployment("web", 2, "shop"))
		} else {
			err = b.Observe(t.Context(), deployKey("web"), deployment("web", ready, "shop"))
		}
		if !errors.Is(err, ErrNotOwned) {
			t.Errorf("observing released %v (ready %d) = %v, want ErrNotOwned", deployKey("web"), ready, err)
		}
		must(t, b.Wait(t.Context()))
	}
	checkRuns(t, r, "shop", "create:", "update:web=1", "update:web=2", "update:")
}
