package opbus

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A WebApp and the Deployments it owns: each Deployment names its owners in
// spec.owners, as ownerReferences would.

func webAppDoc(name string, replicas int) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": int64(replicas)}}
}

func deployment(name string, ready int, owners ...string) map[string]any {
	os := make([]any, len(owners))
	for i, o := range owners {
		os[i] = o
	}
	return map[string]any{
		"metadata": map[string]any{"name": name, "resourceVersion": fmt.Sprint(ready * 7)},
		"spec":     map[string]any{"owners": os},
		"status":   map[string]any{"readyReplicas": int64(ready)},
	}
}

func appKey(name string) Key    { return Key{Kind: "WebApp", Namespace: "default", Name: name} }
func deployKey(name string) Key { return Key{Kind: "Deployment", Namespace: "default", Name: name} }

// ownersOf is the relation of the tests: a Deployment relates to the
// WebApps spec.owners names.
func ownersOf(key Key, obj map[string]any) []Key {
	spec, _ := obj["spec"].(map[string]any)
	l, _ := spec["owners"].([]any)
	var out []Key
	for _, o := range l {
		out = append(out, appKey(o.(string)))
	}
	return out
}

// readiness records, per WebApp, what its handler saw of its Deployments:
// "name=ready" for each, sorted, one string per run.
type readiness struct {
	mu   sync.Mutex
	runs map[string][]string
	evs  map[string][]*Event
}

func (r *readiness) handle(_ context.Context, ev *Event) (Status, error) {
	var parts []string
	rel, _ := ev.New[RelatedField].(map[string]any)
	deps, _ := rel["Deployment"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(deps)) {
		st, _ := deps[name].(map[string]any)["status"].(map[string]any)
		parts = append(parts, fmt.Sprintf("%s=%v", name, st["readyReplicas"]))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		r.runs, r.evs = map[string][]string{}, map[string][]*Event{}
	}
	r.runs[ev.Key.Name] = append(r.runs[ev.Key.Name], ev.Type.String()+":"+strings.Join(parts, ","))
	r.evs[ev.Key.Name] = append(r.evs[ev.Key.Name], ev)
	return Active("ready " + strings.Join(parts, ",")), nil
}

func (r *readiness) of(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs[name])
}

// relatedBus starts a bus with the relation and the readiness handler on
// the store of kind ("memory" or "file") and returns it with a function
// that observes a state (nil: a deletion) and waits until it is handled.
func relatedBus(t *testing.T, store string, field string) (*Bus, *readiness, func(Key, map[string]any)) {
	t.Helper()
	var s Store = NewMemoryStore()
	if store == "file" {
		fs, err := NewFileStore(t.TempDir())
		must(t, err)
		s = fs
	}
	b := newBus(t, &Options{Store: s})
	must(t, b.Relate("Deployment", ownersOf))
	r := &readiness{}
	must(t, b.Handle("ready", r.handle, On{Kinds: []string{"WebApp"}, Fields: []string{field}}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	observe := func(k Key, doc map[string]any) {
		t.Helper()
		if doc == nil {
			must(t, b.ObserveDelete(ctx, k, nil))
		} else {
			must(t, b.Observe(ctx, k, doc))
		}
		must(t, b.Wait(ctx))
	}
	return b, r, observe
}

func checkRuns(t *testing.T, r *readiness, app string, want ...string) {
	t.Helper()
	if got := r.of(app); !slices.Equal(got, want) {
		t.Errorf("runs of %s:\n got %q\nwant %q", app, got, want)
	}
}

var relatedStores = []string{"memory", "file"}

// TestRelatedOncePerDistinctValue: a WebApp handler subscribed to its
// Deployments' status.readyReplicas runs once per distinct value of it,
// and not for other changes of the Deployment.
func TestRelatedOncePerDistinctValue(t *testing.T) {
	for _, store := range relatedStores {
		t.Run(store, func(t *testing.T) {
			b, r, observe := relatedBus(t, store, "related.Deployment[*].status.readyReplicas")
			observe(appKey("shop"), webAppDoc("shop", 3))
			observe(deployKey("web"), deployment("web", 0, "shop"))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			d := deployment("web", 1, "shop")
			d["metadata"].(map[string]any)["resourceVersion"] = "99"
			d["spec"].(map[string]any)["image"] = "app:2" // not subscribed
			observe(deployKey("web"), d)
			observe(appKey("shop"), webAppDoc("shop", 4)) // the WebApp's own change, not subscribed
			observe(deployKey("web"), deployment("web", 2, "shop"))
			checkRuns(t, r, "shop", "create:", "update:web=0", "update:web=1", "update:web=2")
			st, _, err := b.Status(t.Context(), appKey("shop"))
			must(t, err)
			if st != Active("ready web=2") {
				t.Errorf("status = %v, want the last run's", st)
			}
			// Changes name the related object's field under related.
			r.mu.Lock()
			last := r.evs["shop"][len(r.evs["shop"])-1]
			r.mu.Unlock()
			if got := last.Changes.String(); !strings.Contains(got, "related.Deployment.web.status.readyReplicas") {
				t.Errorf("Changes = %s, want the change of related.Deployment.web.status.readyReplicas", got)
			}
		})
	}
}

// TestRelatedAddRemove: a related object that appears, that stops relating,
// or that is deleted is a change; a handler reading one related object by
// name ignores the others.
func TestRelatedAddRemove(t *testing.T) {
	for _, store := range relatedStores {
		t.Run(store, func(t *testing.T) {
			_, r, observe := relatedBus(t, store, "related.Deployment[*].status.readyReplicas")
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(appKey("blog"), webAppDoc("blog", 1))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			observe(deployKey("db"), deployment("db", 1, "shop"))
			observe(deployKey("web"), deployment("web", 1, "blog")) // moves to blog
			observe(deployKey("db"), nil)
			checkRuns(t, r, "shop", "create:", "update:web=1", "update:db=1,web=1", "update:db=1", "update:")
			checkRuns(t, r, "blog", "create:", "update:web=1")
		})
	}
	t.Run("by-name", func(t *testing.T) {
		_, r, observe := relatedBus(t, "memory", "related.Deployment.web.status.readyReplicas")
		observe(appKey("shop"), webAppDoc("shop", 1))
		observe(deployKey("db"), deployment("db", 1, "shop"))
		observe(deployKey("web"), deployment("web", 1, "shop"))
		observe(deployKey("db"), deployment("db", 2, "shop"))
		checkRuns(t, r, "shop", "create:", "update:db=1,web=1")
	})
}

// TestRelatedTwoParents: a related object of two objects is a change of
// both, once each.
func TestRelatedTwoParents(t *testing.T) {
	for _, store := range relatedStores {
		t.Run(store, func(t *testing.T) {
			_, r, observe := relatedBus(t, store, "related.Deployment[*].status.readyReplicas")
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(appKey("blog"), webAppDoc("blog", 1))
			observe(deployKey("cache"), deployment("cache", 0, "shop", "blog"))
			observe(deployKey("cache"), deployment("cache", 2, "shop", "blog"))
			observe(deployKey("cache"), deployment("cache", 2, "blog", "shop")) // the same relations
			checkRuns(t, r, "shop", "create:", "update:cache=0", "update:cache=2")
			checkRuns(t, r, "blog", "create:", "update:cache=0", "update:cache=2")
		})
	}
}

// TestRelatedDeleteRecreate: a related object deleted and created again is
// two changes; an object deleted and created again starts a new
// incarnation whose first run sees its related objects as they are now.
func TestRelatedDeleteRecreate(t *testing.T) {
	for _, store := range relatedStores {
		t.Run(store, func(t *testing.T) {
			_, r, observe := relatedBus(t, store, "related.Deployment[*].status.readyReplicas")
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			observe(deployKey("web"), nil)
			observe(deployKey("web"), deployment("web", 1, "shop"))
			checkRuns(t, r, "shop", "create:", "update:web=1", "update:", "update:web=1")

			observe(appKey("shop"), nil)
			observe(deployKey("web"), deployment("web", 3, "shop")) // while the WebApp is gone
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 4, "shop"))
			checkRuns(t, r, "shop", "create:", "update:web=1", "update:", "update:web=1", "create:web=3", "update:web=4")
		})
	}
}

// TestRelatedChildBeforeParent: related objects observed before the object
// they relate to are in its first run.
func TestRelatedChildBeforeParent(t *testing.T) {
	_, r, observe := relatedBus(t, "memory", "related.Deployment[*].status.readyReplicas")
	observe(deployKey("web"), deployment("web", 1, "shop"))
	observe(deployKey("db"), deployment("db", 2, "shop"))
	observe(appKey("shop"), webAppDoc("shop", 1))
	checkRuns(t, r, "shop", "create:db=2,web=1")
}

// TestRelateDoors: relations and related fields are checked when declared.
func TestRelateDoors(t *testing.T) {
	noop := func(context.Context, *Event) (Status, error) { return Status{}, nil }
	cases := []struct {
		name  string
		setup func(b *Bus) error
		want  string
	}{
		{"no relation", func(b *Bus) error {
			return b.Handle("h", noop, On{Fields: []string{"related.Deployment[*].status"}})
		}, "no relation is declared"},
		{"undeclared kind", func(b *Bus) error {
			must(t, b.Relate("Deployment", ownersOf))
			return b.Handle("h", noop, On{Fields: []string{"related.Service[*].status"}})
		}, `no relation is declared for kind "Service"`},
		{"index for a kind", func(b *Bus) error {
			must(t, b.Relate("Deployment", ownersOf))
			return b.Handle("h", noop, On{Fields: []string{"related[0].x"}})
		}, "expected related.<Kind>.<name>.<field>"},
		{"twice", func(b *Bus) error {
			must(t, b.Relate("Deployment", ownersOf))
			return b.Relate("Deployment", ownersOf)
		}, "declared already"},
		{"nil", func(b *Bus) error { return b.Relate("Deployment", nil) }, "nil function"},
		{"empty kind", func(b *Bus) error { return b.Relate("", ownersOf) }, "empty kind"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.setup(newBus(t, nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	t.Run("bad key from the function", func(t *testing.T) {
		b := newBus(t, nil)
		must(t, b.Relate("Deployment", func(Key, map[string]any) []Key { return []Key{{Kind: "WebApp"}} }))
		err := b.Observe(t.Context(), deployKey("web"), deployment("web", 1))
		if err == nil || !strings.Contains(err.Error(), `relation function of kind "Deployment"`) {
			t.Errorf("got %v, want an error naming the relation function", err)
		}
	})
	t.Run("panic", func(t *testing.T) {
		b := newBus(t, nil)
		must(t, b.Relate("Deployment", func(Key, map[string]any) []Key { panic("boom") }))
		err := b.Observe(t.Context(), deployKey("web"), deployment("web", 1))
		if err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Errorf("got %v, want the panic as an error", err)
		}
	})
}

// TestRelatedWithoutRun: without Run, as in a Juju hook, a related
// object's change waits for the next Dispatch of the object it relates to.
func TestRelatedWithoutRun(t *testing.T) {
	ctx := t.Context()
	b := newBus(t, nil)
	must(t, b.Relate("Deployment", ownersOf))
	r := &readiness{}
	must(t, b.Handle("ready", r.handle, On{Kinds: []string{"WebApp"}, Fields: []string{"related.Deployment[*].status.readyReplicas"}}))
	must(t, b.Dispatch(ctx, appKey("shop"), webAppDoc("shop", 1)))
	must(t, b.Dispatch(ctx, deployKey("web"), deployment("web", 1, "shop")))
	checkRuns(t, r, "shop", "create:")
	must(t, b.Dispatch(ctx, appKey("shop"), webAppDoc("shop", 1)))
	checkRuns(t, r, "shop", "create:", "update:web=1")
}

// TestRelatedOption: Options.Related declares relations for every kind, as
// an adapter that learns its kinds only once it runs does.
func TestRelatedOption(t *testing.T) {
	ctx := t.Context()
	b := newBus(t, &Options{Related: func(key Key, obj map[string]any) []Key {
		if key.Kind != "Deployment" {
			return nil
		}
		return ownersOf(key, obj)
	}})
	r := &readiness{}
	must(t, b.Handle("ready", r.handle, On{Kinds: []string{"WebApp"}, Fields: []string{"related.Deployment[*].status.readyReplicas"}}))
	must(t, b.Dispatch(ctx, appKey("shop"), webAppDoc("shop", 1)))
	must(t, b.Dispatch(ctx, deployKey("web"), deployment("web", 1, "shop")))
	must(t, b.Dispatch(ctx, appKey("shop"), webAppDoc("shop", 1)))
	must(t, b.Dispatch(ctx, deployKey("web"), deployment("web", 2, "shop")))
	must(t, b.Dispatch(ctx, appKey("shop"), webAppDoc("shop", 2)))
	checkRuns(t, r, "shop", "create:", "update:web=1", "update:web=2")
}

// TestRelatedPendingAtShutdown: a new incarnation queued behind a related
// object's change at shutdown still has the live incarnation's deletion
// saved before it, so the next run deletes the old one first.
func TestRelatedPendingAtShutdown(t *testing.T) {
	dir := t.TempDir()
	var log []string
	build := func(t *testing.T, gate bool) *Bus {
		store, err := NewFileStore(dir)
		must(t, err)
		b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: time.Second,
			Incarnation: func(obj map[string]any) string { s, _ := obj["uid"].(string); return s }})
		must(t, b.Relate("Deployment", ownersOf))
		must(t, b.Handle("gate", func(ctx context.Context, ev *Event) (Status, error) {
			if gate {
				<-ctx.Done()
				return Status{}, ctx.Err()
			}
			return Status{}, nil
		}, On{Kinds: []string{"Gate"}}))
		must(t, b.Handle("app", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.Type == Delete {
				log = append(log, "delete "+ev.Old["uid"].(string))
			} else {
				log = append(log, ev.Type.String()+" "+ev.New["uid"].(string))
			}
			return Status{}, nil
		}, On{Kinds: []string{"WebApp"}, Types: []EventType{Create, Update, Delete}}))
		return b
	}
	synctest.Test(t, func(t *testing.T) {
		b := build(t, true)
		stop := run(t, b)
		must(t, b.Observe(t.Context(), appKey("shop"), map[string]any{"uid": "u1"}))
		synctest.Wait()
		must(t, b.Observe(t.Context(), Key{Kind: "Gate", Name: "gate"}, map[string]any{}))
		synctest.Wait()
		must(t, b.Observe(t.Context(), deployKey("web"), deployment("web", 1, "shop")))
		must(t, b.Observe(t.Context(), appKey("shop"), map[string]any{"uid": "u2"}))
		must(t, stop())
	})
	synctest.Test(t, func(t *testing.T) {
		b := build(t, false)
		stop := run(t, b)
		synctest.Wait()
		must(t, stop())
	})
	if got, want := strings.Join(log, ","), "create u1,delete u1,create u2"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestRelatedUnknownParentsForgotten: children related to objects the bus
// never observes (owner references to kinds it does not watch) leave
// nothing behind once they are deleted: no key state for the parent, no
// view, no relation; the bounded memory of finished deletions is all.
// (Each such child once left its parent's key state, about 250 bytes,
// for good.)
func TestRelatedUnknownParentsForgotten(t *testing.T) {
	for _, withRun := range []bool{true, false} {
		t.Run(fmt.Sprintf("run=%v", withRun), func(t *testing.T) {
			b := newBus(t, nil)
			must(t, b.Relate("Deployment", ownersOf))
			r := &readiness{}
			must(t, b.Handle("ready", r.handle, On{Kinds: []string{"WebApp"}, Fields: []string{"related.Deployment[*].status.readyReplicas"}}))
			ctx := t.Context()
			if withRun {
				stop := run(t, b)
				defer func() { must(t, stop()) }()
			}
			const n = 300
			for i := range n {
				k := deployKey(fmt.Sprint("d", i))
				must(t, b.Observe(ctx, k, deployment(k.Name, 1, fmt.Sprint("gone", i), fmt.Sprint("gone", i+1))))
			}
			must(t, b.Wait(ctx))
			b.mu.Lock()
			keys, views := len(b.q.keys), b.rel.views.Len()
			b.mu.Unlock()
			// a parent observed now sees the children observed before it
			must(t, b.Observe(ctx, appKey("gone0"), webAppDoc("gone0", 1)))
			must(t, b.ObserveDelete(ctx, appKey("gone0"), nil))
			must(t, b.Wait(ctx))
			checkRuns(t, r, "gone0", "create:d0=1")
			if keys > n || views != n+1 {
				t.Fatalf("while the children live: %d key states, %d views; want at most %d (the children's) and %d (a parent observed later sees its children)", keys, views, n, n+1)
			}
			for i := range n {
				must(t, b.ObserveDelete(ctx, deployKey(fmt.Sprint("d", i)), nil))
			}
			must(t, b.Wait(ctx))
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.q.keys) != 0 || b.rel.views.Len() != 0 || len(b.rel.parents) != 0 {
				t.Errorf("after the children's deletion: %d key states, %d views, %d relations; want none", len(b.q.keys), b.rel.views.Len(), len(b.rel.parents))
			}
			if len(b.q.ended) > n+1 {
				t.Errorf("%d finished deletions remembered, want at most the %d children and gone0", len(b.q.ended), n)
			}
		})
	}
}
