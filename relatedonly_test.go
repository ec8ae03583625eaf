package opbus

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// keyWrites is a store and a delete sink that note the keys written.
type keyWrites struct {
	MemoryStore
	mu   sync.Mutex
	keys []string // "save Kind/ns/name", "delete ...", "status ...", "deleted ..."
}

func (s *keyWrites) note(op string, key Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, op+" "+key.String())
}

func (s *keyWrites) Save(ctx context.Context, key Key, data []byte) error {
	s.note("save", key)
	return s.MemoryStore.Save(ctx, key, data)
}

func (s *keyWrites) Delete(ctx context.Context, key Key) error {
	s.note("delete", key)
	return s.MemoryStore.Delete(ctx, key)
}

func (s *keyWrites) PutStatus(_ context.Context, key Key, _ map[string]any, _ Status, _ Slots) error {
	s.note("status", key)
	return nil
}

func (s *keyWrites) Deleted(_ context.Context, key Key, _ map[string]any) error {
	s.note("deleted", key)
	return nil
}

func (s *keyWrites) of(kind string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var got []string
	for _, k := range s.keys {
		if _, key, _ := strings.Cut(k, " "); strings.HasPrefix(key, kind+" ") {
			got = append(got, k)
		}
	}
	return got
}

// TestRelatedOnlyNotWritten (rule 34a): an object of a kind no handler
// runs on, observed only for the objects it relates to, is never written:
// no record saved or deleted, no status, no deletion reported, even with
// a collector registered; the objects it relates to still see it.
func TestRelatedOnlyNotWritten(t *testing.T) {
	w := &keyWrites{MemoryStore: *NewMemoryStore()}
	b := newBus(t, &Options{Store: w, Sink: w})
	must(t, b.Relate("Deployment", ownersOf))
	r := &readiness{}
	must(t, b.Handle("ready", r.handle, On{Kinds: []string{"WebApp"}, Fields: []string{"related.Deployment[*].status.readyReplicas"}}))
	must(t, b.Collect("gen", func(context.Context, Key, map[string]any) Status { return Active("seen") }))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	observe := func(k Key, doc map[string]any) {
		t.Helper()
		if doc == nil {
			must(t, b.ObserveDelete(ctx, k, nil))
		} else {
			must(t, b.Observe(ctx, k, doc))
		}
		must(t, b.Wait(ctx))
	}
	observe(appKey("shop"), webAppDoc("shop", 1))
	observe(deployKey("web"), deployment("web", 0, "shop"))
	observe(deployKey("web"), deployment("web", 2, "shop"))
	observe(deployKey("web"), nil)
	observe(deployKey("web"), deployment("web", 1, "shop"))
	cancel()
	must(t, <-done)
	checkRuns(t, r, "shop", "create:", "update:web=0", "update:web=2", "update:", "update:web=1")
	if got := w.of("Deployment"); len(got) > 0 {
		t.Errorf("writes for the Deployment no handler runs on: %q, want none", got)
	}
	if got := w.of("WebApp"); len(got) == 0 {
		t.Errorf("no write for the WebApp, want its record and status")
	}
}
