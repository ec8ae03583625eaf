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

// TestWhenPanicIsRecovered: a panicking On.When is the
// handler's error, under Dispatch and under Run, and the key stays usable.
func TestWhenPanicIsRecovered(t *testing.T) {
	b := newBus(t, nil)
	var h recorder
	must(t, b.Handle("h", h.handle, On{When: func(ev *Event) bool {
		if ev.New["boom"] == true {
			panic("filter bug")
		}
		return true
	}}))
	err := b.Dispatch(t.Context(), podKey, map[string]any{"boom": true})
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "On.When") {
		t.Fatalf("Dispatch = %v, want the When panic as an error", err)
	}
	st, _, _ := b.Status(t.Context(), podKey)
	if st.Level != LevelError {
		t.Fatalf("status %v, want error", st)
	}
	done := make(chan error, 1)
	go func() { done <- b.Dispatch(t.Context(), podKey, map[string]any{"boom": false}) }()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the key stayed busy after a When panic")
	}
	if h.count() != 1 {
		t.Fatalf("handler ran %d times, want 1", h.count())
	}

	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil)
		var calls atomic.Int32
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) { return Status{}, nil },
			On{When: func(ev *Event) bool { calls.Add(1); panic("always") }}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
		time.Sleep(3 * time.Second) // past the first retry
		synctest.Wait()
		must(t, stop())
		if calls.Load() < 2 || b.Stats().Panicked < 2 {
			t.Fatalf("When ran %d times with %d panics counted; want it retried", calls.Load(), b.Stats().Panicked)
		}
	})
}

// TestResumeRetried: a Resume handler that fails runs again as
// Resume until it succeeds.
func TestResumeRetried(t *testing.T) {
	ctx := t.Context()
	store := NewMemoryStore()
	var types []string
	fail := 2
	build := func() *Bus {
		b := newBus(t, &Options{Store: store})
		must(t, b.Handle("r", func(ctx context.Context, ev *Event) (Status, error) {
			types = append(types, ev.Type.String())
			if ev.Type == Resume && fail > 0 {
				fail--
				return Status{}, errors.New("not yet")
			}
			return Status{}, nil
		}, On{Types: []EventType{Create, Update, Resume}, Fields: []string{"a"}}))
		return b
	}
	must(t, build().Dispatch(ctx, podKey, map[string]any{"a": 1}))
	b := build()
	for range 4 {
		_ = b.Dispatch(ctx, podKey, map[string]any{"a": 1})
	}
	if got, want := strings.Join(types, ","), "create,resume,resume,resume"; got != want {
		t.Fatalf("runs %s, want %s", got, want)
	}
}

// TestShutdownBesideDispatch: Run's shutdown waits for a
// Dispatch in flight and saves what was observed meanwhile.
func TestShutdownBesideDispatch(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var log []string
	build := func(t *testing.T, gate chan struct{}) *Bus {
		store, err := NewFileStore(dir)
		must(t, err)
		b := newBus(t, &Options{Store: store, ShutdownTimeout: time.Minute})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			mu.Lock()
			log = append(log, ev.New["v"].(string))
			mu.Unlock()
			if gate != nil && ev.New["v"] == "a" {
				<-gate
			}
			return Active(ev.New["v"].(string)), nil
		}, On{}))
		return b
	}
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		b := build(t, gate)
		stop := run(t, b)
		done := make(chan error, 1)
		go func() { done <- b.Dispatch(t.Context(), podKey, map[string]any{"v": "a"}) }()
		synctest.Wait()
		must(t, b.Observe(t.Context(), podKey, map[string]any{"v": "b"}))
		stopped := make(chan error, 1)
		go func() { stopped <- stop() }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Run returned while a Dispatch was in flight")
		default:
		}
		close(gate)
		must(t, <-done)
		must(t, <-stopped)
	})
	synctest.Test(t, func(t *testing.T) {
		b := build(t, nil)
		stop := run(t, b)
		synctest.Wait()
		must(t, stop())
		st, _, err := b.Status(t.Context(), podKey)
		must(t, err)
		if st.Message != "b" {
			t.Fatalf("status %v, want b handled after the restart", st)
		}
	})
	if got := strings.Join(log, ","); got != "a,b" {
		t.Fatalf("runs %s, want a,b", got)
	}
}

// TestShutdownAbandonsStuckHandler: Run returns even when a
// handler ignores its cancelled context; the state is handled next time.
func TestShutdownAbandonsStuckHandler(t *testing.T) {
	dir := t.TempDir()
	var runs atomic.Int32
	synctest.Test(t, func(t *testing.T) {
		store, err := NewFileStore(dir)
		must(t, err)
		b := newBus(t, &Options{Store: store, ShutdownTimeout: time.Second})
		release := make(chan struct{})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			runs.Add(1)
			<-release // ignores ctx
			return Active("stuck run"), nil
		}, On{}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
		synctest.Wait()
		must(t, stop())
		close(release) // returns after Run: its result must not be committed
		synctest.Wait()
	})
	synctest.Test(t, func(t *testing.T) {
		store, err := NewFileStore(dir)
		must(t, err)
		b := newBus(t, &Options{Store: store})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			runs.Add(1)
			return Active("second run"), nil
		}, On{}))
		stop := run(t, b)
		synctest.Wait()
		must(t, stop())
		st, _, err := b.Status(t.Context(), podKey)
		must(t, err)
		if st.Message != "second run" || runs.Load() != 2 {
			t.Fatalf("status %v after %d runs; want the state handled again after the restart", st, runs.Load())
		}
	})
}

// TestBadLevelIsHandlerError: an out-of-range level is the
// handler's failure, named, and later saves still work.
func TestBadLevelIsHandlerError(t *testing.T) {
	b := newBus(t, nil)
	bad := true
	must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
		if bad {
			return Status{Level: 17}, nil
		}
		return Active("fine"), nil
	}, On{}))
	err := b.Dispatch(t.Context(), podKey, map[string]any{"a": 1})
	if err == nil || !strings.Contains(err.Error(), `handler "h"`) || !strings.Contains(err.Error(), "level 17") {
		t.Fatalf("Dispatch = %v, want an error naming the handler and the level", err)
	}
	bad = false
	must(t, b.Dispatch(t.Context(), podKey, map[string]any{"a": 1}))
	st, _, _ := b.Status(t.Context(), podKey)
	if st != Active("fine") {
		t.Fatalf("status %v, want active: fine", st)
	}
}

// TestCorruptRecordRecovers: an observation that meets a
// corrupt record is kept and handled once the record is repaired.
func TestCorruptRecordRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore()
		must(t, store.Save(t.Context(), podKey, []byte(`garbage`)))
		b := newBus(t, &Options{Store: store})
		var h recorder
		must(t, b.Handle("h", h.handle, On{}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if h.count() != 0 {
			t.Fatal("handler ran over a corrupt record")
		}
		if data, _ := store.Load(t.Context(), podKey); string(data) != "garbage" {
			t.Fatalf("corrupt record overwritten: %s", data)
		}
		must(t, store.Delete(t.Context(), podKey)) // repaired by hand
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		must(t, stop())
		if h.count() != 1 {
			t.Fatalf("handler ran %d times after the repair, want 1 without a new observation", h.count())
		}
	})
}

// TestBackoffPerHandler: observations that do not change a
// failing handler's value do not run it before its retry is due, and do
// not disturb the other handlers.
func TestBackoffPerHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Backoff: Backoff{Initial: time.Minute, Jitter: 0.01}})
		var failing, other atomic.Int32
		must(t, b.Handle("failing", func(ctx context.Context, ev *Event) (Status, error) {
			failing.Add(1)
			return Status{}, errors.New("down")
		}, On{Fields: []string{"spec"}}))
		must(t, b.Handle("other", func(ctx context.Context, ev *Event) (Status, error) {
			other.Add(1)
			return Status{}, nil
		}, On{Fields: []string{"status"}}))
		stop := run(t, b)
		for i := range 50 {
			must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1, "status": i}))
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		if failing.Load() != 1 || other.Load() != 50 {
			t.Fatalf("within its backoff the failing handler ran %d times (want 1), the other %d (want 50)", failing.Load(), other.Load())
		}
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if failing.Load() != 2 {
			t.Fatalf("after its backoff the failing handler ran %d times, want 2", failing.Load())
		}
		must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 2, "status": 0}))
		synctest.Wait()
		if failing.Load() != 3 {
			t.Fatalf("a new value did not run the failing handler at once (%d runs)", failing.Load())
		}
		must(t, stop())
	})
}

// TestNilDocumentRejected: documents are checked at the door.
func TestNilDocumentRejected(t *testing.T) {
	b := newBus(t, nil)
	var h recorder
	must(t, b.Handle("h", h.handle, On{}))
	ctx := t.Context()
	for name, err := range map[string]error{
		"Observe":  b.Observe(ctx, podKey, nil),
		"Dispatch": b.Dispatch(ctx, podKey, nil),
		"Update":   b.ObserveUpdate(ctx, podKey, map[string]any{}, nil),
		"bad type": b.Dispatch(ctx, podKey, map[string]any{"a": struct{}{}}),
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "opbus: ") {
			t.Errorf("%s: %v, want an error", name, err)
		}
	}
	if h.count() != 0 || b.Stats().Queued != 0 {
		t.Fatalf("a rejected document was handled or queued")
	}
	must(t, b.DispatchDelete(ctx, podKey, nil)) // a deletion may not know the last state
}

// TestRemovedHandlerForgotten: a handler no longer registered
// loses its digest and slot at the next commit, and runs again when it
// comes back.
func TestRemovedHandlerForgotten(t *testing.T) {
	ctx := t.Context()
	store := NewMemoryStore()
	build := func(ids ...string) (*Bus, map[string]*recorder) {
		b := newBus(t, &Options{Store: store})
		rs := map[string]*recorder{}
		for _, id := range ids {
			r := &recorder{result: func(ev *Event) (Status, error) { return Blocked("needs a human"), nil }}
			rs[id] = r
			must(t, b.Handle(id, r.handle, On{}))
		}
		return b, rs
	}
	b, _ := build("a", "b")
	must(t, b.Dispatch(ctx, podKey, map[string]any{"x": 1}))
	b, _ = build("a") // b removed
	must(t, b.Dispatch(ctx, podKey, map[string]any{"x": 1, "y": 1}))
	data, _ := store.Load(ctx, podKey)
	if strings.Contains(string(data), `"b"`) {
		t.Fatalf("record keeps the removed handler: %s", data)
	}
	b, rs := build("a", "b") // rolled back
	must(t, b.Dispatch(ctx, podKey, map[string]any{"x": 1, "y": 1}))
	if rs["b"].count() != 1 {
		t.Fatalf("the returning handler ran %d times, want 1", rs["b"].count())
	}
	_, slots, _ := b.Status(ctx, podKey)
	if s, ok := slots.get("b"); !ok || s.Level != LevelBlocked {
		t.Fatalf("slots %v: the returning handler's Blocked is missing", slots)
	}
}

// TestRevisionRerunsOnce: changing a handler's revision runs it
// once more per object, and only once.
func TestRevisionRerunsOnce(t *testing.T) {
	ctx := t.Context()
	store := NewMemoryStore()
	var h recorder
	build := func(rev string) *Bus {
		b := newBus(t, &Options{Store: store})
		must(t, b.Handle("h", h.handle, On{Fields: []string{"spec"}, Revision: rev}))
		return b
	}
	b := build("")
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1}))
	b = build("")
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1}))
	b = build("2")
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1}))
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1}))
	b = build("2")
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1}))
	if h.count() != 2 {
		t.Fatalf("handler ran %d times, want 2 (once, then once for revision 2)", h.count())
	}
}

// TestSelfContainingDocument: a document that contains itself
// is an error at the door, not a crash.
func TestSelfContainingDocument(t *testing.T) {
	b := newBus(t, nil)
	var h recorder
	must(t, b.Handle("h", h.handle, On{}))
	loop := map[string]any{"a": 1}
	loop["self"] = loop
	for name, err := range map[string]error{
		"Observe":  b.Observe(t.Context(), podKey, loop),
		"Dispatch": b.Dispatch(t.Context(), podKey, loop),
	} {
		if err == nil || !strings.Contains(err.Error(), "nested deeper than") {
			t.Errorf("%s: %v, want an error about the nesting", name, err)
		}
	}
	if h.count() != 0 {
		t.Fatal("a document that contains itself was handled")
	}
}

// TestPendingRoundTrip: a state saved as pending comes back
// exactly: Go types, integers beyond 2^53, any bytes in strings.
func TestPendingRoundTrip(t *testing.T) {
	dir := t.TempDir()
	state := map[string]any{"big": int64(1<<60 + 1), "bytes": "\xff\xfe", "f": 1.5, "n": int64(3), "list": []any{"x", nil, true}}
	var seen map[string]any
	build := func(t *testing.T, hold bool) *Bus {
		store, err := NewFileStore(dir)
		must(t, err)
		b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: time.Second})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.Key.Name == "gate" {
				if hold {
					<-ctx.Done()
					return Status{}, ctx.Err()
				}
				return Status{}, nil
			}
			seen = ev.New
			return Status{}, nil
		}, On{}))
		return b
	}
	synctest.Test(t, func(t *testing.T) {
		b := build(t, true)
		stop := run(t, b)
		must(t, b.Observe(t.Context(), Key{Kind: "X", Name: "gate"}, map[string]any{}))
		synctest.Wait()
		must(t, b.Observe(t.Context(), podKey, state))
		must(t, stop())
	})
	synctest.Test(t, func(t *testing.T) {
		b := build(t, false)
		stop := run(t, b)
		synctest.Wait()
		must(t, stop())
	})
	if !Equal(seen, state) || seen["big"] != int64(1<<60+1) || seen["bytes"] != "\xff\xfe" || seen["n"] != int64(3) {
		t.Fatalf("after the restart the handler saw %#v, want %#v", seen, state)
	}
}

// TestWildcardOverMap: a [*] subscription over a map runs for every new
// value of any of its entries, with the change in Event.Changes.
func TestWildcardOverMap(t *testing.T) {
	b := newBus(t, nil)
	var h recorder
	must(t, b.Handle("sel", h.handle, On{Fields: []string{"spec.selector[*]"}}))
	for _, v := range []string{"x", "y", "z"} {
		must(t, b.Dispatch(t.Context(), podKey, map[string]any{"spec": map[string]any{"selector": map[string]any{"a": v, "b": "same"}}}))
	}
	if h.count() != 3 {
		t.Fatalf("handler ran %d times, want 3", h.count())
	}
	if c := h.last().Changes; len(c) != 1 || c[0].Path.String() != "spec.selector.a" || c[0].New != "z" {
		t.Fatalf("changes %v, want spec.selector.a to z", c)
	}
}

// flakyStore fails every write while down is set.
type flakyStore struct {
	MemoryStore
	down  atomic.Bool
	saves atomic.Int32
}

func (s *flakyStore) Save(ctx context.Context, key Key, data []byte) error {
	if s.down.Load() {
		return errors.New("store down")
	}
	s.saves.Add(1)
	return s.MemoryStore.Save(ctx, key, data)
}

// TestStoreOutageBackoffByTime: during a store outage every new state
// makes a failing pass, but the store backoff grows once per period, not
// once per pass: once the store is back, the record is written within the
// backoff of the outage's length, not minutes later.
func TestStoreOutageBackoffByTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &flakyStore{}
		b := newBus(t, &Options{Store: store, Backoff: Backoff{Jitter: -1}})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) { return Active(""), nil }, On{}))
		stop := run(t, b)
		defer func() { must(t, stop()) }()
		store.down.Store(true)
		start := time.Now()
		for i := range 100 { // ten seconds of states, a tenth of a second apart
			must(t, b.Observe(t.Context(), podKey, map[string]any{"n": int64(i)}))
			time.Sleep(100 * time.Millisecond)
		}
		store.down.Store(false)
		back := time.Now()
		for store.saves.Load() == 0 && time.Since(back) < time.Hour {
			time.Sleep(100 * time.Millisecond)
		}
		// Tries at 1, 3, 7 and 15 s: the first after the outage is at 15 s.
		if took := time.Since(start); took > 16*time.Second {
			t.Fatalf("the record was written %v after the outage began (it lasted 10 s): the backoff grew with every state", took)
		}
	})
}
