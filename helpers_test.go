package opbus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// run starts b.Run in the background and returns a stop function that ends
// it and reports its error.
func run(t *testing.T, b *Bus) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

type sinkCall struct {
	key     Key
	overall Status
	slots   Slots
}

type recordingSink struct {
	mu    sync.Mutex
	calls []sinkCall
	fail  bool
}

func (s *recordingSink) PutStatus(ctx context.Context, key Key, obj map[string]any, overall Status, slots Slots) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("sink down")
	}
	s.calls = append(s.calls, sinkCall{key, overall, slots})
	return nil
}

// writeCounter is a store that counts its writes.
type writeCounter struct {
	MemoryStore
	writes atomic.Int32
}

func (s *writeCounter) Save(ctx context.Context, key Key, data []byte) error {
	s.writes.Add(1)
	return s.MemoryStore.Save(ctx, key, data)
}

func (s *writeCounter) Delete(ctx context.Context, key Key) error {
	s.writes.Add(1)
	return s.MemoryStore.Delete(ctx, key)
}

var podKey = Key{Kind: "Pod", Namespace: "default", Name: "web"}

// pod builds a Pod document whose container app is in the given state.
func pod(rv string, state string) map[string]any {
	var st map[string]any
	switch state {
	case "running":
		st = map[string]any{"running": map[string]any{"startedAt": "t0"}}
	default:
		st = map[string]any{"terminated": map[string]any{"exitCode": int64(1), "reason": state}}
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "resourceVersion": rv,
			"annotations": map[string]any{"note": "x"}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}}},
		"status": map[string]any{"phase": "Running", "containerStatuses": []any{
			map[string]any{"name": "app", "ready": state == "running", "state": st},
		}},
	}
}

// recorder is a handler that counts its runs and keeps their events.
type recorder struct {
	mu     sync.Mutex
	events []*Event
	result func(ev *Event) (Status, error)
}

func (r *recorder) handle(ctx context.Context, ev *Event) (Status, error) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	n := len(r.events)
	r.mu.Unlock()
	if r.result != nil {
		return r.result(ev)
	}
	return Active(fmt.Sprintf("run %d", n)), nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *recorder) last() *Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) == 0 {
		return nil
	}
	return r.events[len(r.events)-1]
}

func newBus(t testing.TB, opts *Options) *Bus {
	t.Helper()
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type countingStore struct {
	MemoryStore
	saves int
}

func (s *countingStore) Save(ctx context.Context, key Key, data []byte) error {
	s.saves++
	return s.MemoryStore.Save(ctx, key, data)
}
