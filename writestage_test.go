package opbus

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedStore is a MemoryStore whose Saves of one key name wait for open
// (or for their context), and which counts the Saves of each key name.
type gatedStore struct {
	*MemoryStore
	name    string
	open    chan struct{}
	waiting chan struct{} // gets a value each time a gated Save starts to wait

	mu    sync.Mutex
	saves map[string]int
}

func newGatedStore(name string, mem *MemoryStore) *gatedStore {
	return &gatedStore{MemoryStore: mem, name: name, open: make(chan struct{}), waiting: make(chan struct{}, 16), saves: map[string]int{}}
}

func (s *gatedStore) Save(ctx context.Context, key Key, data []byte) error {
	s.mu.Lock()
	s.saves[key.Name]++
	s.mu.Unlock()
	if key.Name == s.name {
		s.waiting <- struct{}{}
		select {
		case <-s.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemoryStore.Save(ctx, key, data)
}

func (s *gatedStore) savesOf(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves[name]
}

func keyNamed(name string) Key { return Key{Kind: "Pod", Namespace: "default", Name: name} }

func doc(name, image string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{"image": image}}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A write that does not return holds its key, not the handler worker: with
// one worker, another object's handlers run meanwhile, and the held key's
// next state waits for the write (rule 22a).
func TestWritesDoNotHoldWorkers(t *testing.T) {
	store := newGatedStore("slow", NewMemoryStore())
	b := newBus(t, &Options{Store: store, Workers: 1})
	var mu sync.Mutex
	ran := map[string][]string{}
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		ran[ev.Key.Name] = append(ran[ev.Key.Name], img)
		mu.Unlock()
		return Active(""), nil
	}, On{Fields: []string{"spec.image"}}))
	runs := func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ran[name]...)
	}
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", "v1")))
	<-store.waiting // slow's first write is under way, and stays so
	must(t, b.Observe(ctx, keyNamed("slow"), doc("slow", "v2")))
	must(t, b.Observe(ctx, keyNamed("fast"), doc("fast", "v1")))
	waitFor(t, "the other object's handler while a write is held", func() bool { return len(runs("fast")) == 1 })
	waitFor(t, "the other object's write", func() bool { return store.savesOf("fast") == 1 })
	equal(t, []string{"v1"}, runs("slow"), "the held key's next state ran before its write returned")

	close(store.open)
	must(t, b.Wait(ctx))
	equal(t, []string{"v1", "v2"}, runs("slow"))
	must(t, stop())
}

// States queued behind a pass are handled one by one, and their records go
// to the store as one write (rule 22a); a new bus on that store sees them
// handled.
func TestWritesMerged(t *testing.T) {
	store := &writeCounter{}
	b := newBus(t, &Options{Store: store, Workers: 1})
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	var seen []string
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		seen = append(seen, img)
		if img == "v1" {
			started <- struct{}{}
			<-gate
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	stop := run(t, b)
	ctx := context.Background()
	must(t, b.Observe(ctx, podKey, doc("web", "v1")))
	<-started
	for _, v := range []string{"v2", "v3", "v4"} {
		must(t, b.Observe(ctx, podKey, doc("web", v)))
	}
	close(gate)
	must(t, b.Wait(ctx))
	must(t, stop())

	equal(t, []string{"v1", "v2", "v3", "v4"}, seen, "every queued state is handled")
	equal(t, int32(1), store.writes.Load(), "four passes, one write")
	equal(t, uint64(3), b.Stats().Merged)
	st, _, err := b.Status(ctx, podKey)
	must(t, err)
	equal(t, "v4", st.Message)

	again := newBus(t, &Options{Store: store})
	reran := 0
	must(t, again.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		reran++
		return Active(""), nil
	}, On{Fields: []string{"spec.image"}}))
	must(t, again.Dispatch(ctx, podKey, doc("web", "v4")))
	equal(t, 0, reran, "the merged write holds v4 as handled")
}

// A crash (here a halt) between handlers and their merged write re-runs
// each handler whose value moved at most once, and no other (rule 22a).
func TestCrashBeforeMergedWrite(t *testing.T) {
	mem := NewMemoryStore()
	inner := newGatedStore("web", mem)
	close(inner.open) // the first record goes through
	b := newBus(t, &Options{Store: inner})
	counts := map[string]int{}
	var mu sync.Mutex
	handle := func(b *Bus, gate chan struct{}) {
		for _, f := range []string{"spec.image", "spec.other"} {
			must(t, b.Handle(strings.ReplaceAll(f, ".", "-"), func(ctx context.Context, ev *Event) (Status, error) {
				mu.Lock()
				counts[f]++
				mu.Unlock()
				if gate != nil && f == "spec.image" {
					if img, _ := Get[string](ev.New, f); img == "v1" {
						<-gate
					}
				}
				return Active(""), nil
			}, On{Fields: []string{f}}))
		}
	}
	handle(b, nil)
	ctx := context.Background()
	must(t, b.Dispatch(ctx, podKey, doc("web", "v0")))
	<-inner.waiting
	equal(t, map[string]int{"spec.image": 1, "spec.other": 1}, counts)

	// A second bus on the same records: its write of web never returns.
	store := newGatedStore("web", mem)
	b2 := newBus(t, &Options{Store: store, Workers: 1})
	gate := make(chan struct{})
	handle(b2, gate)
	rctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- b2.Run(rctx) }()
	must(t, b2.Observe(ctx, podKey, doc("web", "v1")))
	waitFor(t, "the first pass", func() bool { mu.Lock(); defer mu.Unlock(); return counts["spec.image"] == 2 })
	must(t, b2.Observe(ctx, podKey, doc("web", "v2")))
	must(t, b2.Observe(ctx, podKey, doc("web", "v3")))
	close(gate)
	<-store.waiting // v1..v3 handled, their one write under way
	equal(t, uint64(2), b2.Stats().Merged)
	cancel(fmt.Errorf("lease lost: %w", ErrHalt))
	must(t, <-done)
	equal(t, map[string]int{"spec.image": 4, "spec.other": 1}, counts)

	b3 := newBus(t, &Options{Store: mem})
	handle(b3, nil)
	must(t, b3.Dispatch(ctx, podKey, doc("web", "v3")))
	equal(t, map[string]int{"spec.image": 5, "spec.other": 1}, counts, "the handler whose value moved runs once more; the other not at all")
}

func TestWritersOption(t *testing.T) {
	_, err := New(&Options{Writers: -2})
	if err == nil || !strings.Contains(err.Error(), "Options.Writers is -2") {
		t.Fatalf("New with Writers -2: %v", err)
	}
}

func equal(t *testing.T, want, got any, msg ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%v: want %#v, got %#v", fmt.Sprint(msg...), want, got)
	}
}

// A deletion queued behind merged passes ends the incarnation: their
// record is never written, the deletion's is removed once, and every
// state was handled (rule 22a).
func TestMergedThenDeleted(t *testing.T) {
	store := &countingDeletes{}
	b := newBus(t, &Options{Store: store, Workers: 1})
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	var seen []string
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		seen = append(seen, img)
		if img == "v1" {
			started <- struct{}{}
			<-gate
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	must(t, b.Handle("cleanup", func(ctx context.Context, ev *Event) (Status, error) {
		seen = append(seen, "deleted")
		return Status{}, nil
	}, On{Types: []EventType{Delete}}))
	stop := run(t, b)
	ctx := context.Background()
	must(t, b.Observe(ctx, podKey, doc("web", "v1")))
	<-started
	must(t, b.Observe(ctx, podKey, doc("web", "v2")))
	must(t, b.ObserveDelete(ctx, podKey, doc("web", "v2")))
	close(gate)
	must(t, b.Wait(ctx))
	must(t, stop())

	equal(t, []string{"v1", "v2", "deleted"}, seen)
	equal(t, 0, store.saves, "no record written for an incarnation that ended, but its tombstone")
	equal(t, 1, store.tombstones)
	data, err := store.Load(ctx, podKey)
	must(t, err)
	if !isTombstone(data) {
		t.Errorf("the store holds %s, want a tombstone", data)
	}
}

// countingDeletes is a MemoryStore that counts Saves (of tombstones apart)
// and Deletes; the
// bus calls it from one pass at a time here.
type countingDeletes struct {
	MemoryStore
	saves, tombstones, deletes int
}

func (s *countingDeletes) Save(ctx context.Context, key Key, data []byte) error {
	if isTombstone(data) {
		s.tombstones++
	} else {
		s.saves++
	}
	return s.MemoryStore.Save(ctx, key, data)
}

func (s *countingDeletes) Delete(ctx context.Context, key Key) error {
	s.deletes++
	return s.MemoryStore.Delete(ctx, key)
}

// A pass abandoned at shutdown does not take with it the passes whose
// write was merged into its own: they were handled, and the next run
// does not run them again (rules 16, 22a). Found by TestSimulation (seed
// 363122091: a Create handler ran twice in one incarnation).
func TestAbandonKeepsMergedPasses(t *testing.T) {
	store := NewMemoryStore()
	var mu sync.Mutex
	var created, images []string
	register := func(b *Bus, stuck chan struct{}) (started chan struct{}, gate chan struct{}) {
		started, gate = make(chan struct{}, 1), make(chan struct{})
		must(t, b.Handle("create", func(ctx context.Context, ev *Event) (Status, error) {
			img, _ := Get[string](ev.New, "spec.image")
			mu.Lock()
			created = append(created, img)
			mu.Unlock()
			return Active(""), nil
		}, On{Types: []EventType{Create}}))
		must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
			img, _ := Get[string](ev.New, "spec.image")
			mu.Lock()
			images = append(images, img)
			mu.Unlock()
			if stuck != nil && img == "v1" {
				started <- struct{}{}
				<-gate
			}
			if stuck != nil && img == "v2" {
				close(stuck)
				select {} // ignores its context: shutdown abandons the pass
			}
			return Active(""), nil
		}, On{Fields: []string{"spec.image"}}))
		return started, gate
	}
	b := newBus(t, &Options{Store: store, ShutdownTimeout: 50 * time.Millisecond})
	stuck := make(chan struct{})
	started, gate := register(b, stuck)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	must(t, b.Observe(context.Background(), podKey, doc("web", "v1")))
	<-started
	must(t, b.Observe(context.Background(), podKey, doc("web", "v2")))
	close(gate)
	<-stuck // v1's pass left its write to v2's, which hangs
	cancel()
	must(t, <-done)
	equal(t, uint64(1), b.Stats().Merged)

	b2 := newBus(t, &Options{Store: store})
	register(b2, nil)
	stop := run(t, b2)
	waitFor(t, "the abandoned state handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(images) == 3 })
	must(t, b2.Wait(context.Background()))
	must(t, stop())
	mu.Lock()
	defer mu.Unlock()
	equal(t, []string{"v1"}, created, "the create handler ran once in the incarnation")
	equal(t, []string{"v1", "v2", "v2"}, images, "only the abandoned pass's handler ran again")
}
