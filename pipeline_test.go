package opbus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// imageRuns registers a handler of spec.image on b that records, per
// object, the images it ran for.
func imageRuns(t *testing.T, b *Bus) (runs func(name string) []string) {
	var mu sync.Mutex
	ran := map[string][]string{}
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		ran[ev.Key.Name] = append(ran[ev.Key.Name], img)
		mu.Unlock()
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	return func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ran[name]...)
	}
}

// runsOnRestart dispatches img as the state of each of names to a new bus
// on mem, and returns what its image handler ran for them.
func runsOnRestart(t *testing.T, mem *MemoryStore, img string, names ...string) []string {
	t.Helper()
	b := newBus(t, &Options{Store: mem})
	runs := imageRuns(t, b)
	var ran []string
	for _, n := range names {
		must(t, b.Dispatch(context.Background(), keyNamed(n), doc(n, img)))
		ran = append(ran, runs(n)...)
	}
	return ran
}

// A state that arrives while its object's record is being written runs
// its handlers at once; its own write waits for the one before, and the
// store ends with the latest record (rule 22c).
func TestWriteBesideNextPass(t *testing.T) {
	mem := NewMemoryStore()
	store := newGatedStore("slow", mem)
	b := newBus(t, &Options{Store: store, Workers: 1})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", "v1")))
	<-store.waiting // v1's write is under way, and stays so
	must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", "v2")))
	waitFor(t, "v2's handler while v1's write is held", func() bool { return len(runs("slow")) == 2 })
	time.Sleep(20 * time.Millisecond)
	equal(t, 1, store.savesOf("slow"), "v2's write began before v1's returned")

	close(store.open)
	must(t, b.Settle(ctx))
	st, _, err := b.Status(ctx, keyNamed("slow"))
	must(t, err)
	equal(t, "v2", st.Message, "the status after both writes")
	equal(t, []string{"v1", "v2"}, runs("slow"))
	equal(t, 2, store.savesOf("slow"), "one write per pass, in order")
	equal(t, uint64(1), b.Stats().Beside)
	must(t, stop())

	// The record of v2 is durable: a new bus on the store runs nothing.
	equal(t, []string(nil), runsOnRestart(t, mem, "v2", "slow"), "a handler ran again for a value whose record was written")
}

// failOnce fails the first Save of each key, after letting the test see
// it start.
type failOnce struct {
	*MemoryStore
	started chan struct{}
	gate    chan struct{}
	mu      sync.Mutex
	failed  map[string]bool
	saves   atomic.Int32
}

func (s *failOnce) Save(ctx context.Context, key Key, data []byte) error {
	s.saves.Add(1)
	s.mu.Lock()
	first := !s.failed[key.Name]
	s.failed[key.Name] = true
	s.mu.Unlock()
	if first {
		s.started <- struct{}{}
		<-s.gate
		return errors.New("store down")
	}
	return s.MemoryStore.Save(ctx, key, data)
}

// A write that fails beside the next pass leaves the record unsaved: the
// next pass writes it with its own, and no handler runs twice.
func TestWriteBesideFails(t *testing.T) {
	mem := NewMemoryStore()
	store := &failOnce{MemoryStore: mem, started: make(chan struct{}, 1), gate: make(chan struct{}), failed: map[string]bool{}}
	b := newBus(t, &Options{Store: store, Workers: 1, Backoff: Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	<-store.started
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	waitFor(t, "v2's handler beside v1's write", func() bool { return len(runs("a")) == 2 })
	close(store.gate)
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	must(t, b.Settle(ctx2))
	equal(t, []string{"v1", "v2"}, runs("a"), "a handler ran again after a failed write")
	must(t, stop())

	equal(t, []string(nil), runsOnRestart(t, mem, "v2", "a"), "the record of v2 was not written")
}

// Shutdown while a write beside the next pass does not return: Run
// returns, and what was not durable is handled after a restart, once.
func TestWriteBesideShutdown(t *testing.T) {
	mem := NewMemoryStore()
	store := newGatedStore("slow", mem)
	b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: 50 * time.Millisecond})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", "v1")))
	<-store.waiting
	must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", "v2")))
	waitFor(t, "v2's handler beside v1's write", func() bool { return len(runs("slow")) == 2 })
	done := make(chan error, 1)
	go func() { done <- stop() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return with a write held")
	}

	// Nothing of v1 or v2 reached the store: after a restart, v2 (the
	// latest) is handled, once.
	equal(t, []string{"v2"}, runsOnRestart(t, mem, "v2", "slow"))
}

// States that keep arriving while a write is under way all run at once:
// the first holds its write until that one returns, the others merge into
// it, and one write carries the latest record (rule 22c).
func TestWriteHeldWhileWriting(t *testing.T) {
	mem := NewMemoryStore()
	store := newGatedStore("slow", mem)
	b := newBus(t, &Options{Store: store, Workers: 1})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", "v1")))
	<-store.waiting // v1's write is under way, and stays so
	for i, img := range []string{"v2", "v3", "v4"} {
		must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", img)))
		waitFor(t, img+"'s handler while v1's write is held", func() bool { return len(runs("slow")) == i+2 })
	}
	time.Sleep(20 * time.Millisecond)
	equal(t, 1, store.savesOf("slow"), "a write began before v1's returned")

	close(store.open)
	must(t, b.Settle(ctx))
	equal(t, []string{"v1", "v2", "v3", "v4"}, runs("slow"))
	equal(t, 2, store.savesOf("slow"), "v1's write, then one for v2 to v4")
	st, _, err := b.Status(ctx, keyNamed("slow"))
	must(t, err)
	equal(t, "v4", st.Message)
	equal(t, uint64(3), b.Stats().Beside)
	must(t, stop())

	equal(t, []string(nil), runsOnRestart(t, mem, "v4", "slow"), "a handler ran again for a value whose record was written")
}

// slowStore makes every Save take a while.
type slowStore struct {
	*MemoryStore
	took time.Duration
}

func (s *slowStore) Save(ctx context.Context, key Key, data []byte) error {
	time.Sleep(s.took)
	return s.MemoryStore.Save(ctx, key, data)
}

// A key whose states keep coming while its writes are under way is let go
// now and then: a Dispatch call waiting for it gets its turn while the
// states still come.
func TestDispatchBesideBusyKey(t *testing.T) {
	b := newBus(t, &Options{Store: &slowStore{MemoryStore: NewMemoryStore(), took: 2 * time.Millisecond}, Workers: 1})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	defer func() { must(t, stop()) }()
	ctx, cancel := context.WithCancel(context.Background())
	var feeding sync.WaitGroup
	feeding.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			must(t, b.Observe(context.Background(), keyNamed("hot"), doc("hot", fmt.Sprint("o", i))))
			time.Sleep(100 * time.Microsecond)
		}
	})
	waitFor(t, "the hot key's passes", func() bool { return len(runs("hot")) > 10 })
	dispatched := make(chan error, 1)
	go func() { dispatched <- b.Dispatch(context.Background(), keyNamed("hot"), doc("hot", "d")) }()
	select {
	case err := <-dispatched:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Error("Dispatch waited 10 s for a key that Run kept")
	}
	cancel()
	feeding.Wait()
	if !slices.Contains(runs("hot"), "d") {
		t.Errorf("Dispatch's state was not handled: %v", runs("hot"))
	}
}

// A write that ran beside the next pass gives its write slot back when it
// returns, not when that pass ends: with one write slot, another key's
// write goes ahead while the next pass's handler still runs.
func TestWriteSlotFreedBesideHandler(t *testing.T) {
	mem := NewMemoryStore()
	b := newBus(t, &Options{Store: &slowStore{MemoryStore: mem, took: 5 * time.Millisecond}, Workers: 2, Writers: 1})
	b.lanes.pipeAlways = true
	release := make(chan struct{})
	var started atomic.Int32
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		if img == "hold" {
			started.Add(1)
			<-release
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	stop := run(t, b)
	defer func() { must(t, stop()) }()
	defer close(release)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	time.Sleep(time.Millisecond) // v1's handler has run; its write is under way
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "hold")))
	waitFor(t, "a's second handler", func() bool { return started.Load() == 1 })
	must(t, b.Observe(ctx, keyNamed("b"), doc("b", "v1")))
	waitFor(t, "b's record while a's handler still runs", func() bool {
		data, err := mem.Load(ctx, keyNamed("b"))
		return err == nil && data != nil
	})
}

// heldStore holds every Save until open is closed.
type heldStore struct {
	*MemoryStore
	open  chan struct{}
	saves atomic.Int32
}

func (s *heldStore) Save(ctx context.Context, key Key, data []byte) error {
	s.saves.Add(1)
	select {
	case <-s.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.MemoryStore.Save(ctx, key, data)
}

// A key whose write runs beside is held by the write, not by one of Run's
// goroutines: with one worker and one write slot (two goroutines), the
// handlers of six keys whose writes all hang still run, and each key's
// next state runs too.
func TestParkedKeysFreeWorkers(t *testing.T) {
	mem := NewMemoryStore()
	store := &heldStore{MemoryStore: mem, open: make(chan struct{})}
	b := newBus(t, &Options{Store: store, Workers: 1, Writers: 1})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()
	names := []string{"a", "b", "c", "d", "e", "f"}
	for _, n := range names {
		must(t, b.Observe(ctx, keyNamed(n), doc(n, "v1")))
	}
	ran := func(img string) bool {
		for _, n := range names {
			if !slices.Contains(runs(n), img) {
				return false
			}
		}
		return true
	}
	waitFor(t, "every key's first handler, its write hanging", func() bool { return ran("v1") })
	for _, n := range names {
		must(t, b.Observe(ctx, keyNamed(n), doc(n, "v2")))
	}
	waitFor(t, "every key's second handler", func() bool { return ran("v2") })
	equal(t, int32(1), store.saves.Load(), "writes begun with one write slot")

	close(store.open)
	must(t, b.Settle(ctx))
	must(t, stop())
	equal(t, []string(nil), runsOnRestart(t, mem, "v2", names...), "a handler ran again for a value whose record was written")
}

// orderSink records the overall statuses it is given.
type orderSink struct {
	mu  sync.Mutex
	got []string
}

func (s *orderSink) PutStatus(ctx context.Context, key Key, obj map[string]any, overall Status, slots Slots) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, overall.Message)
	return nil
}

// The statuses of passes that held their write reach the sink, in order,
// before the status of the write that carries their record: a level a
// handler reported is not skipped (rule 22c).
func TestHeldStatusesReachSinkInOrder(t *testing.T) {
	mem := NewMemoryStore()
	store := newGatedStore("slow", mem)
	sink := &orderSink{}
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 1})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	defer func() { must(t, stop()) }()
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", "v1")))
	<-store.waiting
	for i, img := range []string{"v2", "v3", "v4"} {
		must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", img)))
		waitFor(t, img+"'s handler", func() bool { return len(runs("slow")) == i+2 })
	}
	close(store.open)
	must(t, b.Settle(ctx))
	sink.mu.Lock()
	defer sink.mu.Unlock()
	equal(t, []string{"v1", "v2", "v3", "v4"}, sink.got, "the statuses the sink was given")
}
