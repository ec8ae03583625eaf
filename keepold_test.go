package opbus

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestKeepOldAcrossRestart: with On.KeepOld, the first event after a
// restart has the handled value of the fields as Old and its changes
// against it; without it, Old is nil. With a memory store shared by two
// buses and with a FileStore.
func TestKeepOldAcrossRestart(t *testing.T) {
	for _, name := range []string{"memory", "file"} {
		t.Run(name, func(t *testing.T) {
			var store Store = NewMemoryStore()
			if name == "file" {
				fs, err := NewFileStore(t.TempDir())
				must(t, err)
				store = fs
			}
			type seen struct {
				typ     EventType
				old     map[string]any
				changes string
			}
			start := func() (*Bus, map[string]*seen) {
				b := newBus(t, &Options{Store: store})
				got := map[string]*seen{}
				var mu sync.Mutex
				for _, keep := range []bool{true, false} {
					id := map[bool]string{true: "keeps", false: "forgets"}[keep]
					must(t, b.Handle(id, func(ctx context.Context, ev *Event) (Status, error) {
						mu.Lock()
						got[id] = &seen{ev.Type, ev.Old, ev.Changes.String()}
						mu.Unlock()
						return Active(""), nil
					}, On{Fields: []string{"spec.version", "spec"}, KeepOld: keep}))
				}
				return b, got
			}
			doc := func(v string) map[string]any {
				return map[string]any{"spec": map[string]any{"version": v, "replicas": int64(2)}, "status": map[string]any{"phase": "Running"}}
			}
			first, got := start()
			v1 := doc("1")
			must(t, first.Dispatch(t.Context(), podKey, v1))
			if !reflect.DeepEqual(v1, doc("1")) {
				t.Fatalf("keeping the old value changed the observed document: %v", v1)
			}
			if got["keeps"].typ != Create || got["keeps"].old != nil {
				t.Fatalf("first event: %+v, want a create without Old", got["keeps"])
			}

			second, got := start() // a restart
			must(t, second.Dispatch(t.Context(), podKey, doc("2")))
			k, f := got["keeps"], got["forgets"]
			want := map[string]any{"spec": map[string]any{"version": "1", "replicas": int64(2)}}
			if k == nil || k.typ != Update || !reflect.DeepEqual(k.old, want) {
				t.Fatalf("after a restart KeepOld's event is %+v, want an update with Old %v", k, want)
			}
			if k.changes != `change spec.version: "1" → "2"` {
				t.Errorf("changes %q, want only spec.version from 1 to 2", k.changes)
			}
			if f == nil || f.old != nil || !strings.Contains(f.changes, "add spec") {
				t.Errorf("without KeepOld: %+v, want Old nil and the fields as adds", f)
			}
		})
	}
}

// TestKeepOldBounded: a value beyond maxKeptOld is not kept (Old stays nil
// after a restart); KeepOld without Fields is refused; a handler that stops
// keeping drops the kept value from the record.
func TestKeepOldBounded(t *testing.T) {
	if err := newBus(t, nil).Handle("h", func(ctx context.Context, ev *Event) (Status, error) { return Status{}, nil }, On{KeepOld: true}); err == nil || !strings.Contains(err.Error(), "KeepOld needs Fields") {
		t.Fatalf("KeepOld without Fields: %v", err)
	}
	store := NewMemoryStore()
	var old map[string]any
	start := func(keep bool) *Bus {
		b := newBus(t, &Options{Store: store})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			old = ev.Old
			return Status{}, nil
		}, On{Fields: []string{"spec"}, KeepOld: keep}))
		return b
	}
	big := strings.Repeat("x", maxKeptOld)
	must(t, start(true).Dispatch(t.Context(), podKey, map[string]any{"spec": map[string]any{"blob": big}}))
	if data, _ := store.Load(t.Context(), podKey); strings.Contains(string(data), "olds") {
		t.Fatalf("a value over maxKeptOld was kept: %d bytes of record", len(data))
	}
	must(t, start(true).Dispatch(t.Context(), podKey, map[string]any{"spec": map[string]any{"blob": "small"}}))
	if old != nil {
		t.Fatalf("Old after a restart = %v, want nil: the value was too large to keep", old)
	}
	if data, _ := store.Load(t.Context(), podKey); !strings.Contains(string(data), "olds") {
		t.Fatalf("a small value was not kept: %s", data)
	}
	must(t, start(false).Dispatch(t.Context(), podKey, map[string]any{"spec": map[string]any{"blob": "other"}}))
	if data, _ := store.Load(t.Context(), podKey); strings.Contains(string(data), "olds") {
		t.Fatalf("a handler without KeepOld left its kept value in the record: %s", data)
	}
}
