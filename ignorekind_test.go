package opbus

import (
	"context"
	"strings"
	"sync"
	"testing"
)

func withConditions(name string, conds ...map[string]any) map[string]any {
	l := make([]any, len(conds))
	for i, c := range conds {
		l[i] = c
	}
	return map[string]any{"metadata": map[string]any{"name": name}, "status": map[string]any{"conditions": l}}
}

func cond(typ, status string) map[string]any {
	return map[string]any{"type": typ, "status": status}
}

// TestIgnoreKind (rule 34b): a path IgnoreKind gives for one kind is
// ignored on that kind only: a Widget's own condition written by the
// adapter runs no handler, while the same condition of a Pod, and the
// Widget's other conditions, do; a related Pod's condition reaches the
// Widget's handler too.
func TestIgnoreKind(t *testing.T) {
	b := newBus(t, &Options{ListKeys: map[string]string{"status.conditions": "type"}})
	must(t, b.IgnoreKind("Widget", "status.conditions[type=Ready]"))
	must(t, b.Relate("Pod", func(_ Key, obj map[string]any) []Key {
		return []Key{{Kind: "Widget", Namespace: "default", Name: "w"}}
	}))
	var mu sync.Mutex
	runs := map[string]int{}
	count := func(id string) HandlerFunc {
		return func(_ context.Context, ev *Event) (Status, error) {
			mu.Lock()
			defer mu.Unlock()
			runs[id+" "+ev.Key.Kind]++
			return Active(""), nil
		}
	}
	must(t, b.Handle("conds", count("conds"), On{Fields: []string{"status.conditions"}}))
	must(t, b.Handle("pods", count("pods"), On{Kinds: []string{"Widget"}, Fields: []string{"related.Pod[*].status.conditions"}}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() {
		cancel()
		must(t, <-done)
	}()
	w, p := Key{Kind: "Widget", Namespace: "default", Name: "w"}, Key{Kind: "Pod", Namespace: "default", Name: "p"}
	step := func(k Key, doc map[string]any) {
		t.Helper()
		must(t, b.Observe(ctx, k, doc))
		must(t, b.Wait(ctx))
	}
	step(w, withConditions("w", cond("Ready", "False")))
	step(p, withConditions("p", cond("Ready", "False")))
	step(w, withConditions("w", cond("Ready", "True")))                         // ignored on Widgets
	step(p, withConditions("p", cond("Ready", "True")))                         // not on Pods
	step(w, withConditions("w", cond("Ready", "True"), cond("Synced", "True"))) // another condition
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{
		"conds Widget": 2, // create, Synced
		"conds Pod":    2, // create, Ready
		"pods Widget":  3, // create, the Pod appears, its Ready changes
	}
	for k, n := range want {
		if runs[k] != n {
			t.Errorf("runs of %s = %d, want %d (all: %v)", k, runs[k], n, runs)
		}
	}
}

// TestIgnoreKindErrors: IgnoreKind checks its input as Ignore does.
func TestIgnoreKindErrors(t *testing.T) {
	b := newBus(t, nil)
	for _, tc := range []struct {
		kind  string
		paths []string
		want  string
	}{
		{"", []string{"status.x"}, "empty kind"},
		{"Widget", []string{"status..x"}, `IgnoreKind("Widget")`},
	} {
		if err := b.IgnoreKind(tc.kind, tc.paths...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("IgnoreKind(%q, %q) = %v, want an error containing %q", tc.kind, tc.paths, err, tc.want)
		}
	}
	many := make([]string, 70)
	for i := range many {
		many[i] = "status.f" + strings.Repeat("x", i)
	}
	if err := b.IgnoreKind("Widget", many...); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("IgnoreKind with 70 paths = %v, want the limit", err)
	}
	must(t, b.IgnoreKind("Widget", "status.mine"))
	if err := b.Handle("h", func(context.Context, *Event) (Status, error) { return Active(""), nil },
		On{Kinds: []string{"Widget"}, Fields: []string{"status.mine"}}); err == nil || !strings.Contains(err.Error(), "IgnoreKind") {
		t.Errorf("a handler on a path ignored on its only kind: %v, want an error", err)
	}
	must(t, b.Handle("h2", func(context.Context, *Event) (Status, error) { return Active(""), nil },
		On{Kinds: []string{"Widget", "Pod"}, Fields: []string{"status.mine"}}))
	must(t, b.Ignore("status.other")) // rebuilds the kind's comparer, keeping its paths
	if !b.cmpFor("Widget").ignoresAll(MustParsePath("status.mine")) || !b.cmpFor("Widget").ignoresAll(MustParsePath("status.other")) {
		t.Errorf("after Ignore, the Widget comparer lost a path")
	}
	if b.cmpFor("Pod").ignoresAll(MustParsePath("status.mine")) {
		t.Errorf("status.mine is ignored on Pods")
	}
	must(t, b.Dispatch(t.Context(), Key{Kind: "Pod", Name: "p"}, map[string]any{}))
	if err := b.IgnoreKind("Widget", "status.late"); err == nil || !strings.Contains(err.Error(), "started") {
		t.Errorf("IgnoreKind after the bus started = %v, want an error", err)
	}
}

// comparer returns the comparer the bus diffs with: the default, the
// ignored paths and the list keys it was given.
func (b *Bus) comparer() *Comparer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.cmp.Every
}
