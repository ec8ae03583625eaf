package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

var clusterRolesGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}

// lastErr keeps the last error a handler saw.
type lastErr struct {
	mu   sync.Mutex
	n    int
	errs []error
}

func (l *lastErr) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	l.errs = append(l.errs, err)
}

func (l *lastErr) get() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return 0, nil
	}
	return l.n, l.errs[len(l.errs)-1]
}

// TestAttackApplyClusterScopedChild: a namespaced Widget's handler applies
// a cluster-scoped child (a ClusterRole). Kubernetes does not allow a
// cluster-scoped dependent to name a namespaced owner (the garbage
// collector reports OwnerRefInvalidNamespace and never collects it), so
// Apply should refuse, as it refuses a child in another namespace,
// instead of creating an object with an owner reference that cannot work.
func TestAttackApplyClusterScopedChild(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	name := "attack15-" + ns
	t.Cleanup(func() { _ = c.Resource(clusterRolesGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	var l lastErr
	src := newSrcRef()
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			_, err := src.get().Client(ev).Apply(ctx, map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
				"metadata": map[string]any{"name": name},
			})
			l.add(err)
			return opbus.Status{}, opbus.Permanent(err)
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}}))
	})
	src.set(op.src)
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the handler ran", func() bool { n, _ := l.get(); return n > 0 })
	_, err := l.get()
	if err == nil {
		cr := get(t, c, clusterRolesGVR, "", name)
		t.Fatalf("Apply of a cluster-scoped child of a namespaced owner succeeded, giving it owner references %+v that garbage collection refuses (OwnerRefInvalidNamespace); want an error", cr.GetOwnerReferences())
	}
	t.Logf("error: %v", err)
}

// TestAttackApplyOtherNamespace: a child in another namespace than its
// owner is refused with an error that says why; bad input to Client and
// Apply returns errors naming it, never panics.
func TestAttackClientBadInput(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var mu sync.Mutex
	got := map[string]string{}
	src := newSrcRef()
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			cl := src.get().Client(ev)
			try := func(what string, obj any) {
				defer func() {
					if r := recover(); r != nil {
						mu.Lock()
						got[what] = fmt.Sprintf("PANIC %v", r)
						mu.Unlock()
					}
				}()
				_, err := cl.Apply(ctx, obj)
				mu.Lock()
				got[what] = fmt.Sprint(err)
				mu.Unlock()
			}
			try("other namespace", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "default"}})
			try("nil", nil)
			try("no apiVersion", map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "x"}})
			try("unknown kind", map[string]any{"apiVersion": "v1", "kind": "Nope", "metadata": map[string]any{"name": "x"}})
			try("string", "hello")
			try("bad name", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "Not_A_Name"}})
			func() {
				defer func() {
					if r := recover(); r != nil {
						mu.Lock()
						got["nil event"] = fmt.Sprintf("PANIC %v", r)
						mu.Unlock()
					}
				}()
				_, err := src.get().Client(nil).Apply(ctx, map[string]any{})
				mu.Lock()
				got["nil event"] = fmt.Sprint(err)
				mu.Unlock()
			}()
			err := cl.ApplyStatus(ctx, map[string]any{"x": 1})
			mu.Lock()
			got["status not in writes"] = fmt.Sprint(err)
			mu.Unlock()
			err = cl.ApplyStatus(ctx, nil)
			mu.Lock()
			got["status nil"] = fmt.Sprint(err)
			mu.Unlock()
			return opbus.Status{}, nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}, Writes: []string{"status.y"}}))
	})
	src.set(op.src)
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the handler ran", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 9 })
	mu.Lock()
	defer mu.Unlock()
	for k, v := range got {
		t.Logf("%s: %s", k, v)
		if strings.HasPrefix(v, "PANIC") || v == "<nil>" && k != "status nil" {
			t.Errorf("%s: %s", k, v)
		}
	}
	if !strings.Contains(got["other namespace"], "another namespace") {
		t.Errorf("other namespace: %s", got["other namespace"])
	}
}

// TestAttackFailingHandlerApplies: a handler that applies a child and then
// fails, retried with its backoff, sends the child once (its repeats are
// skipped), and its failures make one HandlerFailed Event whose count
// grows.
func TestAttackFailingHandlerApplies(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var w applies
	var l lastErr
	src := newSrcRef()
	op := startBus(t, k8s.Options{Config: w.wrap(env.AdminConfig()), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Owned: true},
	}}, opbus.Options{Backoff: opbus.Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond}}, func(b *opbus.Bus) {
		must(t, b.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			_, err := src.get().Client(ev).Apply(ctx, map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "w"},
				"data": map[string]any{"a": "1"},
			})
			l.add(err)
			if err != nil {
				return opbus.Status{}, err
			}
			return opbus.Status{}, errors.New("later step fails")
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec", "related.ConfigMap[*].data"}}))
	})
	src.set(op.src)
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "retries", func() bool { n, _ := l.get(); return n >= 8 })
	n, err := l.get()
	if err != nil {
		t.Fatalf("apply error: %v", err)
	}
	if got := w.count("configmaps", "w"); got != 1 {
		t.Errorf("%d runs, %d applies of the child, want 1", n, got)
	}
	evs, e := c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if e != nil {
		t.Fatal(e)
	}
	failed := 0
	for _, ev := range evs.Items {
		if r, _, _ := unstructuredString(ev.Object, "reason"); r == k8s.ReasonHandlerFailed {
			failed++
			cnt, _, _ := unstructuredInt(ev.Object, "count")
			t.Logf("HandlerFailed count %d: %v", cnt, ev.Object["message"])
		}
	}
	if failed != 1 {
		t.Errorf("%d HandlerFailed Events, want 1", failed)
	}
}

func unstructuredInt(o map[string]any, k string) (int64, bool, error) {
	s, ok := o[k].(int64)
	return s, ok, nil
}

// TestAttackTwoHandlersOneChild: two handlers apply fields of one child;
// each keeps its own. Then they disagree on one field, both reading the
// child: how many applies?
func TestAttackTwoHandlersOneChild(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var w applies
	src := newSrcRef()
	var la, lb lastErr
	h := func(l *lastErr, key string) opbus.HandlerFunc {
		return func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			spec, _ := ev.New["spec"].(map[string]any)
			data := map[string]any{key: "mine"}
			if v, ok := spec["shared"].(string); ok {
				data["shared"] = v + "-" + key
			}
			_, err := src.get().Client(ev).Apply(ctx, map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "w"}, "data": data,
			})
			l.add(err)
			return opbus.Status{}, err
		}
	}
	op := start(t, k8s.Options{Config: w.wrap(env.AdminConfig()), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Owned: true},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("a", h(&la, "a"), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec", "related.ConfigMap[*].data"}}))
		must(t, b.Handle("b", h(&lb, "b"), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec", "related.ConfigMap[*].data"}}))
	})
	src.set(op.src)
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "both fields", func() bool {
		cm, err := c.Resource(configMapsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
		if err != nil {
			return false
		}
		d := cm.Object["data"].(map[string]any)
		return d["a"] == "mine" && d["b"] == "mine"
	})
	time.Sleep(time.Second)
	before := w.count("configmaps", "w")
	t.Logf("applies when settled: %d", before)
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"shared":"x"}}`)
	// One of them applies shared first; the other's apply conflicts with
	// it, fails naming it, and is retried on its backoff: no loop.
	eventually(t, "one handler fails naming the other", func() bool {
		_, ea := la.get()
		_, eb := lb.get()
		return ea != nil && strings.Contains(ea.Error(), `"b"`) || eb != nil && strings.Contains(eb.Error(), `"a"`)
	})
	time.Sleep(3 * time.Second)
	after := w.count("configmaps", "w")
	na, ea := la.get()
	nb, eb := lb.get()
	t.Logf("after 3s of disagreement: %d applies, runs a=%d (%v) b=%d (%v)", after-before, na, ea, nb, eb)
	if after-before > 10 {
		t.Errorf("two handlers applying different values of one field: %d applies in 3s (a hot loop)", after-before)
	}
	cm, err := c.Resource(configMapsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := cm.Object["data"].(map[string]any)["shared"]; v != "x-a" && v != "x-b" {
		t.Errorf("data.shared = %v, want the value of the handler that applied it first", v)
	}
}

// TestAttackOwnerDeletedAndRecreated: a Widget with a child is deleted
// (no garbage collector runs in the test's server, so the child stays
// with an owner reference to the gone uid): no handler fails, nothing
// is written; a Widget created again under the name takes the child over
// with exactly one controller reference, to its own uid.
func TestAttackOwnerDeletedAndRecreated(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var w applies
	var l lastErr
	src := newSrcRef()
	var rmu sync.Mutex
	var readErrs []string
	op := start(t, k8s.Options{Config: w.wrap(env.AdminConfig()), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Owned: true},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			_, err := src.get().Client(ev).Apply(ctx, map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "w"}, "data": map[string]any{"a": "1"},
			})
			l.add(err)
			return opbus.Status{}, err
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec", "related.ConfigMap[*].metadata.uid"}}))
		must(t, b.Handle("read", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.New == nil {
				return opbus.Status{}, nil
			}
			uid, _ := opbus.Get[string](ev.New, "metadata.uid")
			refs, _ := opbus.Get[[]any](ev.New, `related.ConfigMap["w"].metadata.ownerReferences`)
			rmu.Lock()
			readErrs = append(readErrs, fmt.Sprintf("widget %s sees child refs %v", uid, refs))
			rmu.Unlock()
			return opbus.Status{}, nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"related.ConfigMap[*].metadata.ownerReferences"}}))
	})
	src.set(op.src)
	w1 := createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "child", func() bool { n, _ := l.get(); return n >= 1 && w.count("configmaps", "w") == 1 })
	if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	// The child changes while its owner is gone (no garbage collector).
	patch(t, c, configMapsGVR, ns, "w", `{"data":{"other":"x"},"metadata":{"labels":{"l":"1"}}}`)
	time.Sleep(time.Second)
	n1, err := l.get()
	if err != nil || w.count("configmaps", "w") != 1 {
		t.Errorf("after the owner's deletion: %d runs (last error %v), %d applies", n1, err, w.count("configmaps", "w"))
	}
	w2 := createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the child taken over", func() bool {
		cm := get(t, c, configMapsGVR, ns, "w")
		refs := cm.GetOwnerReferences()
		return len(refs) == 1 && refs[0].UID == w2.GetUID()
	})
	time.Sleep(time.Second)
	cm := get(t, c, configMapsGVR, ns, "w")
	t.Logf("w1 %s w2 %s; child refs %+v; applies %d", w1.GetUID(), w2.GetUID(), cm.GetOwnerReferences(), w.count("configmaps", "w"))
	rmu.Lock()
	for _, s := range readErrs {
		t.Log(s)
	}
	rmu.Unlock()
}

// TestAttackReferencedSwitchFast: a ConfigMap's data.target switched
// between two Secrets many times in a row ends related to the last one
// only: a change of the other Secret runs nothing, one of the target does.
func TestAttackReferencedSwitchFast(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	var mu sync.Mutex
	var last string
	runs := 0
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: configMapsGVR, Namespaces: []string{ns}},
		{GVR: secrets, Namespaces: []string{ns}, Referenced: []k8s.Reference{{Kind: "ConfigMap", Field: "data.target"}}},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("see", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			rel, _ := ev.New[opbus.RelatedField].(map[string]any)
			s, _ := rel["Secret"].(map[string]any)
			names := []string{}
			for n := range s {
				names = append(names, n)
			}
			mu.Lock()
			last = strings.Join(names, ",")
			runs++
			mu.Unlock()
			return opbus.Status{}, nil
		}, opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"related.Secret[*].data"}}))
	})
	for _, n := range []string{"s1", "s2"} {
		if _, err := c.Resource(secrets).Namespace(ns).Create(t.Context(), obj(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"stringData":{"k":%q}}`, n, n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Resource(configMapsGVR).Namespace(ns).Create(t.Context(), obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"target":"s1"}}`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "related to s1", func() bool { mu.Lock(); defer mu.Unlock(); return last == "s1" })
	for i := range 21 {
		target := []string{"s2", "s1"}[i%2]
		patch(t, c, configMapsGVR, ns, "c", fmt.Sprintf(`{"data":{"target":%q}}`, target))
	}
	eventually(t, "related to s2 alone", func() bool { mu.Lock(); defer mu.Unlock(); return last == "s2" })
	time.Sleep(time.Second)
	mu.Lock()
	n, l := runs, last
	mu.Unlock()
	if l != "s2" {
		t.Fatalf("related after the switches: %q, want s2", l)
	}
	patch(t, c, secrets, ns, "s1", `{"stringData":{"k":"changed"}}`)
	time.Sleep(time.Second)
	mu.Lock()
	if runs != n || last != "s2" {
		t.Errorf("a change of s1, no longer named: %d runs (was %d), related %q", runs, n, last)
	}
	mu.Unlock()
	patch(t, c, secrets, ns, "s2", `{"stringData":{"k":"changed"}}`)
	eventually(t, "a change of s2 runs the handler", func() bool { mu.Lock(); defer mu.Unlock(); return runs > n })
	t.Logf("%d runs in all", runs)
}

// TestAttackClusterScopedOwnerNamespacedChild: a handler on Namespaces
// (cluster-scoped) applies a ConfigMap and leaves its namespace out: the
// error should say that a namespaced child of a cluster-scoped owner needs
// a namespace, not a 404 from the server.
func TestAttackClusterScopedOwnerNamespacedChild(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	var l lastErr
	src := newSrcRef()
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, FieldSelector: "metadata.name=" + ns},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			cl := src.get().Client(ev)
			_, err := cl.Apply(ctx, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}})
			l.add(err)
			_, err2 := cl.Apply(ctx, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": ns}})
			l.add(err2)
			return opbus.Status{}, nil
		}, opbus.On{Kinds: []string{"Namespace"}, Fields: []string{"metadata.labels"}}))
	})
	src.set(op.src)
	eventually(t, "the handler ran", func() bool { n, _ := l.get(); return n >= 2 })
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("no namespace: %v", l.errs[0])
	t.Logf("with namespace: %v", l.errs[1])
	if l.errs[1] != nil {
		t.Errorf("a ConfigMap child of a Namespace, in it: %v", l.errs[1])
	}
	if l.errs[0] == nil || !strings.Contains(l.errs[0].Error(), "namespace") {
		t.Errorf("a namespaced child of a cluster-scoped owner, with no namespace: %v, want an error saying it needs one", l.errs[0])
	}
}

// TestAttackAppliedBounded: what a Source keeps of its Clients' applies,
// to skip repeats, goes with the objects: after 20 Widgets with a child
// and a status each come and go, it keeps nothing; an apply of a resource
// no informer watches is never kept (it is never skipped).
func TestAttackAppliedBounded(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var l lastErr
	src := newSrcRef()
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Owned: true},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			name, _ := opbus.Get[string](ev.New, "metadata.name")
			cl := src.get().Client(ev)
			_, err := cl.Apply(ctx, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}})
			if err == nil {
				_, err = cl.Apply(ctx, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}})
			}
			if err == nil {
				err = cl.ApplyStatus(ctx, map[string]any{"seen": true})
			}
			l.add(err)
			return opbus.Status{}, err
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}, Writes: []string{"status.seen"}}))
	})
	src.set(op.src)
	for i := range 20 {
		createWidget(t, c, ns, fmt.Sprintf("w%d", i), `{"size":1}`)
	}
	eventually(t, "20 runs", func() bool { n, _ := l.get(); return n >= 20 })
	if _, err := l.get(); err != nil {
		t.Fatal(err)
	}
	// The status goes with the pass's conditions, after the handler
	// returned (K32).
	eventually(t, "the 20 statuses written", func() bool { return k8s.AppliedKept(src.get()) >= 40 })
	time.Sleep(200 * time.Millisecond)
	if n := k8s.AppliedKept(src.get()); n != 40 {
		t.Errorf("kept for %d objects, want 40 (20 ConfigMaps, 20 Widgets' status; no unwatched Secret)", n)
	}
	for i := range 20 {
		name := fmt.Sprintf("w%d", i)
		for _, gvr := range []schema.GroupVersionResource{widgetsGVR, configMapsGVR, secrets} {
			if err := c.Resource(gvr).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "nothing kept", func() bool { return k8s.AppliedKept(src.get()) == 0 })
}

// TestAttackRestartPendingWriter: a handler that applies a child and then
// fails is pending when the operator stops; after a restart it runs again
// once, when its stored retry is due (3 s), and succeeds, a handler that read the child and succeeded before
// does not run again (K29), and nothing else is written.
func TestAttackRestartPendingWriter(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var w applies
	var fail sync.Mutex
	failing := true
	var childRuns, seeRuns lastErr
	register := func(src *srcRef) func(b *opbus.Bus) {
		return func(b *opbus.Bus) {
			must(t, b.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				_, err := src.get().Client(ev).Apply(ctx, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "w"}, "data": map[string]any{"a": "1"}})
				fail.Lock()
				f := failing
				fail.Unlock()
				if err == nil && f {
					err = errors.New("not yet")
				}
				childRuns.add(err)
				return opbus.Status{}, err
			}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}}))
			must(t, b.Handle("see", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				var err error
				if _, gerr := opbus.Get[string](ev.New, `related.ConfigMap["w"].data.a`); gerr != nil {
					err = gerr // recorded only: the handler succeeds
				}
				seeRuns.add(err)
				return opbus.Active("seen"), nil
			}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"related.ConfigMap[*].data"}}))
		}
	}
	opts := k8s.Options{Config: w.wrap(env.AdminConfig()), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Owned: true},
	}}
	src1 := newSrcRef()
	op := startBus(t, opts, opbus.Options{Backoff: opbus.Backoff{Initial: 3 * time.Second, Max: 3 * time.Second, Jitter: -1}}, register(src1))
	src1.set(op.src)
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the child seen", func() bool { n, err := seeRuns.get(); return n >= 1 && err == nil })
	eventually(t, "the child handler failed", func() bool { n, _ := childRuns.get(); return n >= 1 })
	op.stop(t)
	nc, _ := childRuns.get()
	ns1, _ := seeRuns.get()
	fail.Lock()
	failing = false
	fail.Unlock()
	before := w.count("configmaps", "w")
	src2 := newSrcRef()
	op2 := start(t, opts, register(src2))
	src2.set(op2.src)
	eventually(t, "the pending handler runs again", func() bool { n, _ := childRuns.get(); return n > nc })
	time.Sleep(2 * time.Second)
	n2, err := childRuns.get()
	s2, _ := seeRuns.get()
	t.Logf("child runs %d → %d (last %v); see runs %d → %d; applies %d → %d", nc, n2, err, ns1, s2, before, w.count("configmaps", "w"))
	if err != nil || n2 != nc+1 {
		t.Errorf("after the restart: child ran %d more times (last error %v), want once, succeeding", n2-nc, err)
	}
	if s2 != ns1 {
		t.Errorf("after the restart: see ran %d more times, want 0", s2-ns1)
	}
}

// srcRef hands a handler the Source it runs under once start has
// returned it.
type srcRef struct {
	ch chan struct{}
	s  *k8s.Source
}

func newSrcRef() *srcRef { return &srcRef{ch: make(chan struct{})} }

func (r *srcRef) set(s *k8s.Source) { r.s = s; close(r.ch) }

func (r *srcRef) get() *k8s.Source { <-r.ch; return r.s }
