package k8s_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// Widget is a custom resource's Go type as kubebuilder writes one, with
// no scheme: Apply finds its kind from the watched resource of kind
// Widget.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              map[string]any `json:"spec,omitempty"`
}

// TestClientDeletesAndReads: a Widget handler applies typed children with
// empty TypeMeta (ConfigMaps from client-go's scheme, a Widget from the
// watched resource), reads them back from the cache with Get and
// List(Controlled), and deletes one of them under the uid it listed; a
// delete whose uid precondition fails deletes nothing and is a conflict;
// one of an object already gone is no error.
func TestClientDeletesAndReads(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	var mu sync.Mutex
	var listed [][]string // the children each run listed, by name
	var got *unstructured.Unstructured
	var errs []error
	var src *k8s.Source
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: configMaps, Namespaces: []string{ns}, Owned: true},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("keeper", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			if strings.HasSuffix(ev.Key.Name, "-child") {
				return opbus.Active("child"), nil
			}
			cl := src.Client(ev)
			size, _ := ev.New["spec"].(map[string]any)["size"].(int64)
			fail := func(err error) (opbus.Status, error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return opbus.Status{}, err
			}
			if size == 1 {
				for _, n := range []string{"a", "b"} {
					if _, err := cl.Apply(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ev.Key.Name + "-" + n}, Data: map[string]string{"n": n}}); err != nil {
						return fail(err)
					}
				}
				if _, err := cl.Apply(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Name: ev.Key.Name + "-child"}, Spec: map[string]any{"size": 0}}); err != nil {
					return fail(err)
				}
				return opbus.Active("applied"), nil
			}
			kids, err := cl.List(ctx, "ConfigMap", &k8s.ListOptions{Controlled: true})
			if err != nil {
				return fail(err)
			}
			var names []string
			for _, k := range kids {
				names = append(names, k.GetName())
			}
			a, err := cl.Get(ctx, "ConfigMap", "", ev.Key.Name+"-a")
			mu.Lock()
			listed, got = append(listed, names), a
			mu.Unlock()
			if err != nil {
				return fail(err)
			}
			for _, k := range kids {
				if strings.HasSuffix(k.GetName(), "-b") {
					if err := cl.Delete(ctx, k, &k8s.DeleteOptions{Propagation: metav1.DeletePropagationBackground}); err != nil {
						return fail(err)
					}
					// Gone already: no error.
					if err := cl.Delete(ctx, k, nil); err != nil {
						return fail(err)
					}
				}
			}
			// A uid precondition that fails deletes nothing.
			stale := a.DeepCopy()
			stale.SetUID("00000000-0000-0000-0000-000000000000")
			if err := cl.Delete(ctx, stale, nil); !apierrors.IsConflict(err) {
				return fail(fmt.Errorf("delete under another uid: %v, want a conflict", err))
			}
			return opbus.Active("pruned"), nil
		}, opbus.On{Fields: []string{"spec"}, Kinds: []string{widgetKind}}))
	})
	src = op.src
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the children applied", func() bool {
		_, e1 := c.Resource(configMaps).Namespace(ns).Get(t.Context(), "w-b", metav1.GetOptions{})
		_, e2 := c.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "w-child", metav1.GetOptions{})
		return e1 == nil && e2 == nil
	})
	if kid := get(t, c, widgetsGVR, ns, "w-child"); len(kid.GetOwnerReferences()) != 1 || kid.GetOwnerReferences()[0].Name != "w" {
		t.Errorf("the typed Widget child's owner references: %+v", kid.GetOwnerReferences())
	}
	// Another ConfigMap that the Widget does not control is not listed.
	if _, err := c.Resource(configMaps).Namespace(ns).Create(t.Context(), obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w-other"}}`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	eventually(t, "w-b deleted", func() bool {
		_, err := c.Resource(configMaps).Namespace(ns).Get(t.Context(), "w-b", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	get(t, c, configMaps, ns, "w-a") // still there: the stale delete deleted nothing
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("handler errors: %v", errs)
	}
	if len(listed) == 0 || !slices.Equal(listed[0], []string{"w-a", "w-b"}) {
		t.Errorf("List(ConfigMap, Controlled) gave %v, want [w-a w-b] first", listed)
	}
	if got == nil || got.GetName() != "w-a" || got.Object["data"].(map[string]any)["n"] != "a" {
		t.Errorf("Get(ConfigMap, w-a) = %v", got)
	}
}

// TestApplyStatusGivesUp: as with server-side apply, a field the handler
// set before and now sets to nil goes, and an empty status gives up every
// field the handler set, while another writer's field stays; neither is
// refused.
func TestApplyStatusGivesUp(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var src *k8s.Source
	var mu sync.Mutex
	var errs []error
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("sizer", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				var st map[string]any
				switch ev.New["spec"].(map[string]any)["size"] {
				case int64(1):
					st = map[string]any{"active": 1, "last": "x"}
				case int64(2):
					st = map[string]any{"active": 1, "last": nil}
				default:
					st = map[string]any{}
				}
				err := src.Client(ev).ApplyStatus(ctx, st)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				return opbus.Active("sized"), err
			}, opbus.On{Fields: []string{"spec"}, Writes: []string{"status.active", "status.last"}}))
		})
	src = op.src
	createWidget(t, c, ns, "w", `{"size":1}`)
	status := func() map[string]any {
		st, _, _ := unstructured.NestedMap(get(t, c, widgetsGVR, ns, "w").Object, "status")
		return st
	}
	eventually(t, "status.last set", func() bool { return status()["last"] == "x" })
	patch(t, c, widgetsGVR, ns, "w", `{"status":{"foreign":"y"}}`, "status")
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	eventually(t, "status.last given up", func() bool { _, ok := status()["last"]; return !ok })
	if st := status(); st["active"] != int64(1) || st["foreign"] != "y" {
		t.Errorf("status after a nil: %v, want active 1 and foreign y kept", st)
	}
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":3}}`)
	eventually(t, "status.active given up", func() bool { _, ok := status()["active"]; return !ok })
	if st := status(); st["foreign"] != "y" {
		t.Errorf("status after an empty one: %v, want foreign y kept", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("ApplyStatus errors: %v", errs)
	}
}

// TestStatusFieldsWithConditions: a handler's status field and the
// condition it returns land in one write: in every version of the Widget
// a watch sees, the Available condition (the slot "available") says what
// the handler made of the status.active beside it, with the generation of
// the spec it came from as its observedGeneration. Before, the field
// landed first, and a client saw it with the condition of the pass
// before.
func TestStatusFieldsWithConditions(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	w, err := c.Resource(widgetsGVR).Namespace(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var src *k8s.Source
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("available", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				size := ev.New["spec"].(map[string]any)["size"]
				if err := src.Client(ev).ApplyStatus(ctx, map[string]any{"active": size}); err != nil {
					return opbus.Status{}, err
				}
				return opbus.Active(fmt.Sprintf("active %v", size)), nil
			}, opbus.On{Fields: []string{"spec"}, Writes: []string{"status.active"}}))
		})
	src = op.src
	createWidget(t, c, ns, "w", `{"size":1}`)
	for size := 2; size <= 5; size++ {
		want := fmt.Sprintf("active %d", size-1)
		eventually(t, want, func() bool {
			return conditionsOf(get(t, c, widgetsGVR, ns, "w"))["Available"].Message == want
		})
		patch(t, c, widgetsGVR, ns, "w", fmt.Sprintf(`{"spec":{"size":%d}}`, size))
	}
	seen := 0
	timeout := time.After(waitFor)
	for done := false; !done; {
		var ev watch.Event
		select {
		case ev = <-w.ResultChan():
		case <-timeout:
			t.Fatalf("no version with status.active 5 and its condition within %v", waitFor)
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		active, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "active")
		if !ok {
			continue
		}
		seen++
		cond := conditionsOf(u)["Available"]
		// The generation of the pass that wrote both: spec.size, which
		// the n-th patch set to n+1, at generation n+1.
		if want := fmt.Sprintf("active %v", active); cond.Message != want || fmt.Sprint(cond.ObservedGeneration) != fmt.Sprint(active) {
			t.Errorf("version %s: status.active %v with condition Available %q of generation %d: want %q of generation %v, in one write",
				u.GetResourceVersion(), active, cond.Message, cond.ObservedGeneration, want, active)
		}
		done = active == int64(5) && cond.Message == "active 5"
	}
	if seen < 5 {
		t.Errorf("%d versions with status.active seen, want at least 5", seen)
	}
}
