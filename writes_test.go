package opbus

import (
	"context"
	"strings"
	"testing"
)

// TestWritesOwnWriteDoesNotRerun checks On.Writes: a handler's write of a
// field it declares does not run it again, also inside a subtree it
// subscribes to; another handler's write of the same object runs the
// writer as any change; a third handler subscribed to the written field
// runs on it; and the writer's Changes leave its own writes out.
func TestWritesOwnWriteDoesNotRerun(t *testing.T) {
	ctx := context.Background()
	b, err := New(nil)
	must(t, err)
	runs := map[string]int{}
	var writerChanges []string
	record := func(id string) HandlerFunc {
		return func(ctx context.Context, ev *Event) (Status, error) {
			runs[id]++
			if id == "writer" {
				writerChanges = writerChanges[:0]
				for _, c := range ev.Changes {
					writerChanges = append(writerChanges, c.Path.String())
				}
			}
			return Status{}, nil
		}
	}
	must(t, b.Handle("writer", record("writer"), On{Fields: []string{"spec", "status"}, Writes: []string{"status.readyReplicas"}}))
	must(t, b.Handle("other", record("other"), On{Fields: []string{"spec.size"}, Writes: []string{"status.phase"}}))
	must(t, b.Handle("reader", record("reader"), On{Fields: []string{"status.readyReplicas"}}))

	doc := func(size, ready int, phase string) map[string]any {
		st := map[string]any{}
		if ready >= 0 {
			st["readyReplicas"] = int64(ready)
		}
		if phase != "" {
			st["phase"] = phase
		}
		o := map[string]any{"spec": map[string]any{"size": int64(size)}}
		if len(st) > 0 {
			o["status"] = st // an empty status would be a value, and a status of only ignored fields none
		}
		return o
	}
	steps := []struct {
		why  string
		obj  map[string]any
		want map[string]int // runs so far
		ch   string         // writer's Changes at its last run
	}{
		{"created: all run", doc(1, -1, ""), map[string]int{"writer": 1, "other": 1, "reader": 1}, "spec"},
		{"writer writes status.readyReplicas: only the reader runs", doc(1, 1, ""), map[string]int{"writer": 1, "other": 1, "reader": 2}, "spec"},
		{"writer writes it again, changed: only the reader runs", doc(1, 2, ""), map[string]int{"writer": 1, "other": 1, "reader": 3}, "spec"},
		{"other writes status.phase: the writer runs, other does not", doc(1, 2, "Ready"), map[string]int{"writer": 2, "other": 1, "reader": 3}, "status.phase"},
		{"spec changes: writer and other run, Changes without readyReplicas", doc(2, 3, "Ready"), map[string]int{"writer": 3, "other": 2, "reader": 4}, "spec.size"},
	}
	for _, s := range steps {
		must(t, b.Dispatch(ctx, podKey, s.obj))
		for id, n := range s.want {
			if runs[id] != n {
				t.Errorf("%s: %s ran %d times, want %d", s.why, id, runs[id], n)
			}
		}
		if got := strings.Join(writerChanges, ","); got != s.ch {
			t.Errorf("%s: writer's Changes = %s, want %s", s.why, got, s.ch)
		}
	}
	subs := b.Subscriptions()
	if len(subs[0].Writes) != 1 || subs[0].Writes[0].String() != "status.readyReplicas" {
		t.Errorf("Subscriptions()[0].Writes = %v, want [status.readyReplicas]", subs[0].Writes)
	}
}

// TestWritesChangeRunsOnce checks that Writes is part of the digest: a
// handler whose Writes changes runs once more on an unchanged object (as
// with Revision), after a restart on the same store.
func TestWritesChangeRunsOnce(t *testing.T) {
	ctx := context.Background()
	store := NewMemoryStore()
	n := 0
	fn := func(ctx context.Context, ev *Event) (Status, error) { n++; return Status{}, nil }
	obj := map[string]any{"spec": map[string]any{"size": int64(1)}}
	for i, writes := range [][]string{nil, nil, {"status.a"}, {"status.a"}, {"status.a", "status.b"}} {
		b, err := New(&Options{Store: store})
		must(t, err)
		must(t, b.Handle("h", fn, On{Writes: writes}))
		must(t, b.Dispatch(ctx, podKey, obj))
		want := map[int]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 3}[i]
		if n != want {
			t.Errorf("bus %d with Writes %v: %d runs, want %d", i, writes, n, want)
		}
	}
}

// TestWritesChecked checks the registration errors of On.Writes.
func TestWritesChecked(t *testing.T) {
	fn := func(ctx context.Context, ev *Event) (Status, error) { return Status{}, nil }
	for _, c := range []struct {
		why  string
		on   On
		want string
	}{
		{"bad path", On{Writes: []string{"status..x"}}, `handler "h": Writes`},
		{"writes a field whole", On{Fields: []string{"status.readyReplicas"}, Writes: []string{"status.readyReplicas"}}, "covers field status.readyReplicas whole"},
		{"writes above a field", On{Fields: []string{"spec", "status.a"}, Writes: []string{"status"}}, "covers field status.a whole"},
	} {
		b, err := New(nil)
		must(t, err)
		err = b.Handle("h", fn, c.on)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Handle = %v, want an error containing %q", c.why, err, c.want)
		}
	}
	b, err := New(nil)
	must(t, err)
	if err := b.Handle("h", fn, On{Fields: []string{"status"}, Writes: []string{"status.readyReplicas"}}); err != nil {
		t.Errorf("writes inside a subscribed subtree: %v, want no error", err)
	}
}

// TestWritesWithIgnoreKind checks that a handler's Writes and the paths
// IgnoreKind gives for its object's kind are both left out of its digest,
// whichever was declared first: neither an own write nor a write of a
// path ignored on the kind runs it, a change elsewhere does, and on
// another kind the IgnoreKind path is a change like any other.
func TestWritesWithIgnoreKind(t *testing.T) {
	for _, order := range []string{"IgnoreKind first", "Handle first"} {
		t.Run(order, func(t *testing.T) {
			ctx := context.Background()
			b, err := New(nil)
			must(t, err)
			runs := 0
			handle := func() {
				must(t, b.Handle("writer", func(context.Context, *Event) (Status, error) { runs++; return Status{}, nil },
					On{Fields: []string{"status"}, Writes: []string{"status.mine"}}))
			}
			if order == "Handle first" {
				handle()
			}
			must(t, b.IgnoreKind("Widget", "status.adapter"))
			if order == "IgnoreKind first" {
				handle()
			}
			widget, pod := Key{Kind: "Widget", Name: "w"}, Key{Kind: "Pod", Name: "p"}
			st := func(mine, adapter, other int64) map[string]any {
				return map[string]any{"status": map[string]any{"mine": mine, "adapter": adapter, "other": other}}
			}
			for _, s := range []struct {
				key  Key
				obj  map[string]any
				want int
			}{
				{widget, st(0, 0, 0), 1},
				{widget, st(1, 0, 0), 1}, // its own write
				{widget, st(1, 1, 0), 1}, // the adapter's, ignored on Widgets
				{widget, st(2, 2, 0), 1}, // both at once
				{widget, st(2, 2, 1), 2}, // someone else's
				{pod, st(0, 0, 0), 3},
				{pod, st(1, 0, 0), 3}, // its own write
				{pod, st(1, 1, 0), 4}, // not ignored on Pods
			} {
				must(t, b.Dispatch(ctx, s.key, s.obj))
				if runs != s.want {
					t.Fatalf("after %v %v: %d runs, want %d", s.key, s.obj, runs, s.want)
				}
			}
		})
	}
}
