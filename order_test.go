package opbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestPerKeyOrderUnderLoad: many goroutines observe many keys; each key's
// states reach its handler in order, one at a time, while keys run in
// parallel.
func TestPerKeyOrderUnderLoad(t *testing.T) {
	const keys, updates = 50, 200
	b := newBus(t, &Options{Workers: 8, MaxBacklog: updates + 1})
	var mu sync.Mutex
	last := map[Key]int{}
	var inFlight sync.Map
	var violations atomic.Int64
	must(t, b.Handle("seq", func(ctx context.Context, ev *Event) (Status, error) {
		if _, busy := inFlight.LoadOrStore(ev.Key, true); busy {
			violations.Add(1)
		}
		defer inFlight.Delete(ev.Key)
		n := int(ev.New["seq"].(int))
		mu.Lock()
		if n <= last[ev.Key] {
			violations.Add(1)
		}
		last[ev.Key] = n
		mu.Unlock()
		return Status{}, nil
	}, On{Fields: []string{"seq"}}))
	stop := run(t, b)
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			key := Key{Kind: "Pod", Name: fmt.Sprint("p", k)}
			for i := 1; i <= updates; i++ {
				must(t, b.Observe(context.Background(), key, map[string]any{"seq": i}))
			}
		})
	}
	wg.Wait()
	must(t, b.Wait(t.Context()))
	must(t, stop())
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d ordering or overlap violations", v)
	}
	for k := range keys {
		if n := last[Key{Kind: "Pod", Name: fmt.Sprint("p", k)}]; n != updates {
			t.Errorf("key p%d ended at %d, want %d", k, n, updates)
		}
	}
}

// TestFinalStateHandledExactlyOnce is the oracle: 1,000 keys × 100 random
// updates, handlers failing at random; afterwards, for every key and
// subscription, the last value handled successfully is the final value, it
// was handled at most once since the update that made it final (zero times
// when it equals the value handled before, which is once per value), and
// no value was ever handled twice in a row.
func TestFinalStateHandledExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keys, updates = 1000, 100
		fields := []string{"a", "b", "c"}
		var failMu sync.Mutex
		failRng := rand.New(rand.NewPCG(3, 4))
		b := newBus(t, &Options{Workers: 8, MaxBacklog: 4, Backoff: Backoff{Initial: time.Second, Max: 4 * time.Second}})
		type success struct {
			i     int // the update that produced the state handled
			value any
		}
		var mu sync.Mutex
		successes := map[Key]map[string][]success{}
		for _, f := range fields {
			must(t, b.Handle("h-"+f, func(ctx context.Context, ev *Event) (Status, error) {
				failMu.Lock()
				fail := failRng.IntN(10) == 0
				failMu.Unlock()
				if fail {
					return Status{}, errors.New("random failure")
				}
				mu.Lock()
				if successes[ev.Key] == nil {
					successes[ev.Key] = map[string][]success{}
				}
				successes[ev.Key][f] = append(successes[ev.Key][f], success{ev.New["i"].(int), ev.New[f]})
				mu.Unlock()
				return Status{}, nil
			}, On{Fields: []string{f}}))
		}
		stop := run(t, b)
		rng := rand.New(rand.NewPCG(1, 2))
		final := map[Key]map[string]any{}
		since := map[Key]map[string]int{} // the update that set each field's final value
		// Each key gets its updates in bursts of ten, back to back, so that
		// its backlog passes the bound of 4 and is coalesced.
		for block := 0; block < updates; block += 10 {
			for k := range keys {
				key := Key{Kind: "X", Name: fmt.Sprint(k)}
				for i := block; i < block+10; i++ {
					obj := map[string]any{"i": i, "a": rng.IntN(3), "b": rng.IntN(3), "c": i / 10}
					if since[key] == nil {
						since[key] = map[string]int{}
					}
					for _, f := range fields {
						if prev, ok := final[key]; !ok || prev[f] != obj[f] {
							since[key][f] = i
						}
					}
					final[key] = obj
					must(t, b.Observe(t.Context(), key, obj))
				}
			}
			synctest.Wait()
		}
		time.Sleep(time.Hour) // let every retry run
		synctest.Wait()
		must(t, stop())
		for key, obj := range final {
			for _, f := range fields {
				got := successes[key][f]
				n := 0
				for j, s := range got {
					if s.i >= since[key][f] {
						n++
					}
					if j > 0 && got[j-1].value == s.value {
						t.Fatalf("%v h-%s: value %v handled twice in a row: %v", key, f, s.value, got)
					}
				}
				if n > 1 || len(got) == 0 || got[len(got)-1].value != obj[f] {
					t.Fatalf("%v h-%s: final value %v (since update %d) handled %d times since, last handled %v; history %v", key, f, obj[f], since[key][f], n, got[len(got)-1], got)
				}
			}
		}
		s := b.Stats()
		if s.Failed == 0 || s.Coalesced == 0 {
			t.Errorf("the oracle did not exercise failures and coalescing: %+v", s)
		}
		t.Logf("stats: %+v", s)
	})
}

func TestCoalescingIsVisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		var obs countingObserver
		b := newBus(t, &Options{MaxBacklog: 3, Workers: 1, Observer: &obs,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		gate := make(chan struct{})
		var seen []string
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.New["n"] == 0 {
				<-gate
			}
			seen = append(seen, fmt.Sprintf("%v/%v", ev.New["n"], ev.Coalesced))
			return Status{}, nil
		}, On{}))
		stop := run(t, b)
		for n := range 10 {
			must(t, b.Observe(t.Context(), podKey, map[string]any{"n": n}))
			synctest.Wait()
		}
		close(gate)
		synctest.Wait()
		must(t, stop())
		// 0 runs; 1,2,3 queue; 4 coalesces the backlog to [4]; 5,6 queue; 7 coalesces to [7]; 8,9 queue
		if got := strings.Join(seen, " "); got != "0/false 7/true 8/false 9/false" {
			t.Errorf("handled %s", got)
		}
		if s := b.Stats(); s.Coalesced != 2 || obs.coalesced.Load() != 2 {
			t.Errorf("coalesced counters: stats %d, observer %d; want 2", s.Coalesced, obs.coalesced.Load())
		}
		if !strings.Contains(logs.String(), "level=WARN msg=\"opbus: backlog coalesced") {
			t.Errorf("no warning logged:\n%s", logs.String())
		}
	})
}

type countingObserver struct {
	observed, coalesced, handled, retrying atomic.Int64
	maxQueued                              atomic.Int64
}

func (o *countingObserver) Observed(key Key, queued int) {
	o.observed.Add(1)
	if int64(queued) > o.maxQueued.Load() {
		o.maxQueued.Store(int64(queued))
	}
}
func (o *countingObserver) Coalesced(Key) { o.coalesced.Add(1) }
func (o *countingObserver) Handled(key Key, handler string, attempt int, took time.Duration, err error) {
	o.handled.Add(1)
}
func (o *countingObserver) Retrying(Key, time.Duration) { o.retrying.Add(1) }

// TestShutdownKeepsPendingWork: states observed but not handled when Run
// stops are saved and handled by the next Bus on the same store.
func TestShutdownKeepsPendingWork(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		store, err := NewFileStore(dir)
		must(t, err)
		b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: 5 * time.Second})
		gate := make(chan struct{})
		var handled []string
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			handled = append(handled, ev.Key.Name)
			if ev.Key.Name == "slow" {
				select {
				case <-gate:
				case <-ctx.Done(): // cancelled at the shutdown deadline
					return Status{}, ctx.Err()
				}
			}
			return Status{}, nil
		}, On{}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), Key{Kind: "X", Name: "slow"}, map[string]any{"v": 1}))
		synctest.Wait()
		for _, n := range []string{"a", "b"} {
			must(t, b.Observe(t.Context(), Key{Kind: "X", Name: n}, map[string]any{"v": 1}))
		}
		must(t, stop()) // the slow handler holds the only worker until the deadline
		if strings.Join(handled, ",") != "slow" {
			t.Fatalf("handled %v before shutdown", handled)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		store, err := NewFileStore(dir)
		must(t, err)
		b := newBus(t, &Options{Store: store})
		var handled []string
		var mu sync.Mutex
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			mu.Lock()
			handled = append(handled, ev.Key.Name)
			mu.Unlock()
			return Status{}, nil
		}, On{}))
		stop := run(t, b)
		synctest.Wait()
		must(t, stop())
		mu.Lock()
		defer mu.Unlock()
		got := strings.Join(slices.Sorted(slices.Values(handled)), ",")
		if got != "a,b,slow" {
			t.Fatalf("after restart handled %s, want a,b,slow", got)
		}
		for _, n := range []string{"a", "b", "slow"} {
			data, _ := store.Load(t.Context(), Key{Kind: "X", Name: n})
			if strings.Contains(string(data), "pending") {
				t.Errorf("%s: pending state left in the record after it was handled: %s", n, data)
			}
		}
	})
}

func TestLogsCarryCorrelationID(t *testing.T) {
	var logs bytes.Buffer
	b := newBus(t, &Options{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	var id string
	must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
		id = ev.ID
		return Status{}, errors.New("nope")
	}, On{}))
	_ = b.Dispatch(t.Context(), podKey, map[string]any{"a": 1})
	if len(id) != 36 || !strings.Contains(logs.String(), `"id":"`+id+`"`) {
		t.Fatalf("correlation ID %q not in the logs:\n%s", id, logs.String())
	}
	for _, want := range []string{`"key":"Pod default/web"`, `"handler":"h"`, `"attempt":1`, `"err":"nope"`, `"level":"ERROR"`, `"took":`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s", want)
		}
	}
}

func TestRunTwiceAndClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil)
		stop := run(t, b)
		synctest.Wait()
		if err := b.Run(t.Context()); err == nil {
			t.Error("second Run: want an error")
		}
		must(t, stop())
		if err := b.Observe(t.Context(), podKey, map[string]any{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Observe after Run: got %v, want ErrClosed", err)
		}
	})
}

// Rule 5: a Dispatch that waits for its busy key queues its state when it
// is called, so a state observed while it waits is handled after it, and
// the bus ends on the latest state.
func TestDispatchWaitingKeepsCallOrder(t *testing.T) {
	t.Run("writes in the pass", func(t *testing.T) { dispatchWaitingKeepsCallOrder(t, false) })
	t.Run("writes beside the next pass", func(t *testing.T) { dispatchWaitingKeepsCallOrder(t, true) })
}

func dispatchWaitingKeepsCallOrder(t *testing.T, beside bool) {
	opts := &Options{Workers: 2}
	if beside {
		opts.Store = &slowStore{MemoryStore: NewMemoryStore(), took: 2 * time.Millisecond}
	}
	b := newBus(t, opts)
	b.lanes.pipeAlways = beside
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var mu sync.Mutex
	var seen []string
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		seen = append(seen, img)
		mu.Unlock()
		if img == "hold" {
			started <- struct{}{}
			<-release
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	stop := run(t, b)
	defer func() { must(t, stop()) }()
	ctx := context.Background()
	key := keyNamed("a")

	must(t, b.Observe(ctx, key, doc("a", "hold")))
	<-started
	dispatched := make(chan error, 1)
	go func() { dispatched <- b.Dispatch(ctx, key, doc("a", "v3")) }()
	waitFor(t, "Dispatch to wait for the busy key", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.awaited(b.q.keys[key])
	})
	must(t, b.Observe(ctx, key, doc("a", "v4")))
	close(release)
	must(t, <-dispatched)
	must(t, b.Wait(ctx))
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"hold", "v3", "v4"}; !slices.Equal(seen, want) {
		t.Errorf("handled %v, want %v: the state observed while Dispatch waited goes after Dispatch's", seen, want)
	}
}

// Rule 5 with more than one caller, a bounded backlog and a deletion: each
// waiting Dispatch keeps its place in call order, its state is never
// coalesced into a later one, and it returns its own pass's errors.
func TestDispatchWaitingCases(t *testing.T) {
	type setup struct {
		b       *Bus
		key     Key
		release chan struct{}
		seen    func() []string
	}
	start := func(t *testing.T, opts *Options) setup {
		b := newBus(t, opts)
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		var mu sync.Mutex
		var seen []string
		must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
			img, _ := Get[string](ev.Object(), "spec.image")
			if ev.Type == Delete {
				img = "delete " + img
			}
			mu.Lock()
			seen = append(seen, img)
			mu.Unlock()
			switch img {
			case "hold":
				started <- struct{}{}
				<-release
			case "bad":
				return Status{}, Permanent(errors.New("bad image"))
			}
			return Active(img), nil
		}, On{Fields: []string{"spec.image"}, Types: []EventType{Create, Update, Delete}}))
		stop := run(t, b)
		t.Cleanup(func() { must(t, stop()) })
		key := keyNamed("a")
		must(t, b.Observe(context.Background(), key, doc("a", "hold")))
		<-started
		return setup{b: b, key: key, release: release, seen: func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(seen)
		}}
	}
	dispatch := func(s setup, image string, waiting int) <-chan error {
		done := make(chan error, 1)
		go func() { done <- s.b.Dispatch(context.Background(), s.key, doc("a", image)) }()
		waitFor(t, fmt.Sprintf("%d Dispatch calls to wait", waiting), func() bool {
			s.b.mu.Lock()
			defer s.b.mu.Unlock()
			return s.b.q.kq.Awaiting(s.b.q.keys[s.key]) == waiting
		})
		return done
	}
	ctx := context.Background()

	t.Run("two callers", func(t *testing.T) {
		s := start(t, &Options{Workers: 2})
		d1 := dispatch(s, "d1", 1)
		must(t, s.b.Observe(ctx, s.key, doc("a", "v")))
		d2 := dispatch(s, "d2", 2)
		close(s.release)
		must(t, <-d1)
		must(t, <-d2)
		must(t, s.b.Wait(ctx))
		if got, want := s.seen(), []string{"hold", "d1", "v", "d2"}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v", got, want)
		}
	})
	t.Run("bounded backlog", func(t *testing.T) {
		s := start(t, &Options{Workers: 2, MaxBacklog: 1})
		d := dispatch(s, "bad", 1)
		for _, img := range []string{"v1", "v2", "v3"} {
			must(t, s.b.Observe(ctx, s.key, doc("a", img)))
		}
		close(s.release)
		if err := <-d; err == nil || !strings.Contains(err.Error(), "bad image") {
			t.Errorf("Dispatch returned %v, want its own pass's error (bad image)", err)
		}
		must(t, s.b.Wait(ctx))
		if got, want := s.seen(), []string{"hold", "bad", "v3"}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v: the observed states coalesce, the Dispatch's does not", got, want)
		}
	})
	t.Run("deleted and created again", func(t *testing.T) {
		s := start(t, &Options{Workers: 2, Incarnation: func(obj map[string]any) string {
			uid, _ := Get[string](obj, "metadata.uid")
			return uid
		}})
		d := dispatch(s, "d", 1)
		must(t, s.b.ObserveDelete(ctx, s.key, doc("a", "d")))
		again := doc("a", "new")
		again["metadata"].(map[string]any)["uid"] = "2"
		must(t, s.b.Observe(ctx, s.key, again))
		close(s.release)
		must(t, <-d)
		must(t, s.b.Wait(ctx))
		if got, want := s.seen(), []string{"hold", "d", "delete d", "new"}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v", got, want)
		}
		_, slots, err := s.b.Status(ctx, s.key)
		must(t, err)
		if got := slots["image"].Message; got != "new" {
			t.Errorf("image slot %q, want the new incarnation's", got)
		}
	})
}

// Rule 5 for a call that finds its key free: its state needs no queue, but
// its pass may put it back behind states that go first — the deletion of
// the incarnation it replaces, or states the record left pending — and a
// state observed meanwhile past the backlog bound must not coalesce it
// away: the call handles its own state and returns nil.
func TestDispatchGivenStateGoesBack(t *testing.T) {
	ctx := context.Background()
	key := keyNamed("a")
	t.Run("behind the deletion of a replaced incarnation", func(t *testing.T) {
		b := newBus(t, &Options{MaxBacklog: 1, Incarnation: func(obj map[string]any) string {
			uid, _ := Get[string](obj, "metadata.uid")
			return uid
		}})
		withUID := func(image, uid string) map[string]any {
			d := doc("a", image)
			d["metadata"].(map[string]any)["uid"] = uid
			return d
		}
		inDelete, release := make(chan struct{}), make(chan struct{})
		var mu sync.Mutex
		var seen []string
		must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
			img, _ := Get[string](ev.Object(), "spec.image")
			mu.Lock()
			seen = append(seen, ev.Type.String()+" "+img)
			mu.Unlock()
			if ev.Type == Delete {
				close(inDelete)
				<-release
			}
			return Active(img), nil
		}, On{Fields: []string{"spec.image"}, Types: []EventType{Create, Update, Delete}}))
		must(t, b.Dispatch(ctx, key, withUID("1", "u1")))
		done := make(chan error, 1)
		go func() { done <- b.Dispatch(ctx, key, withUID("2", "u2")) }()
		<-inDelete
		must(t, b.Observe(ctx, key, withUID("3", "u2")))
		close(release)
		must(t, <-done)
		must(t, b.Wait(ctx))
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"create 1", "delete 1", "create 2", "update 3"}; !slices.Equal(seen, want) {
			t.Errorf("handled %v, want %v", seen, want)
		}
	})
	t.Run("behind pending states", func(t *testing.T) {
		mem := NewMemoryStore()
		b1 := newBus(t, &Options{Store: mem, Workers: 1, ShutdownTimeout: 20 * time.Millisecond})
		started := make(chan struct{}, 1)
		must(t, b1.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
			if img, _ := Get[string](ev.New, "spec.image"); img == "1" {
				started <- struct{}{}
				<-ctx.Done()
			}
			return Active("ok"), nil
		}, On{Fields: []string{"spec.image"}}))
		stop := run(t, b1)
		must(t, b1.Observe(ctx, key, doc("a", "1")))
		<-started
		must(t, b1.Observe(ctx, key, doc("a", "2")))
		must(t, stop()) // 1, abandoned, and 2 are saved as pending

		b2 := newBus(t, &Options{Store: mem, MaxBacklog: 1})
		inPending, release := make(chan struct{}), make(chan struct{})
		var mu sync.Mutex
		var seen []string
		must(t, b2.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
			img, _ := Get[string](ev.New, "spec.image")
			mu.Lock()
			seen = append(seen, img)
			mu.Unlock()
			if img == "2" {
				close(inPending)
				<-release
			}
			return Active(img), nil
		}, On{Fields: []string{"spec.image"}}))
		done := make(chan error, 1)
		go func() { done <- b2.Dispatch(ctx, key, doc("a", "5")) }()
		<-inPending
		must(t, b2.Observe(ctx, key, doc("a", "6")))
		close(release)
		must(t, <-done)
		must(t, b2.Wait(ctx))
		mu.Lock()
		defer mu.Unlock()
		if n := len(seen); n < 3 || !slices.Equal(seen[n-3:], []string{"2", "5", "6"}) {
			t.Errorf("handled %v, want it to end with 2, 5, 6", seen)
		}
	})
}
