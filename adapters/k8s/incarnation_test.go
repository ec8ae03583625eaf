package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// recordOf returns the inc and fails of an object's record annotation;
// ok is false when it has none or an empty one.
func recordOf(u *unstructured.Unstructured) (inc string, fails map[string]any, ok bool) {
	v, _ := annotationOf(u, k8s.AnnotationRecord)
	if v == "" {
		return "", nil, false
	}
	var rec struct {
		Inc   string         `json:"inc"`
		Fails map[string]any `json:"fails"`
	}
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return "", nil, false
	}
	return rec.Inc, rec.Fails, true
}

// TestRecreatedObjectIsNewIncarnation deletes a Widget and creates
// another of the same name and spec while the delete handler of the
// first still fails (as a StatefulSet re-creates its Pods), with and
// without the finalizer; with it, an administrator removes the finalizer
// by hand so that the name is free. The first object's delete handler
// runs with the first object's state until it succeeds, and once; the
// second object is a new incarnation: its handlers run as for a new
// object (its spec equals the first's, so an inherited digest would skip
// them), and neither the first incarnation's record, failures and
// statuses nor its finalizer handling ever touch it.
func TestRecreatedObjectIsNewIncarnation(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	for _, finalizer := range []bool{false, true} {
		t.Run(fmt.Sprintf("finalizer=%v", finalizer), func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			c := dynClient(t, env.AdminConfig())
			var r runs
			var failing atomic.Bool
			var mu sync.Mutex
			var cleanedUp []string // uids of the Old of successful cleanups
			failing.Store(true)
			startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}, Finalizer: finalizer}}},
				opbus.Options{Backoff: opbus.Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: 0.01}},
				func(b *opbus.Bus) {
					must(t, b.Handle("size", r.handler(func(ev *opbus.Event) opbus.Status {
						size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
						return opbus.Active(fmt.Sprintf("size %d", size))
					}), opbus.On{Fields: []string{"spec.size"}}))
					must(t, b.Handle("cleanup", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
						r.add(ev)
						if failing.Load() {
							return opbus.Status{}, errors.New("cleanup is not done")
						}
						mu.Lock()
						cleanedUp = append(cleanedUp, string((&unstructured.Unstructured{Object: ev.Old}).GetUID()))
						mu.Unlock()
						return opbus.Status{}, nil
					}, opbus.On{Types: []opbus.EventType{opbus.Delete}}))
				})
			gone := func() bool {
				_, err := c.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}

			first := createWidget(t, c, ns, "w", `{"size":1}`)
			eventually(t, "size runs on the first widget", func() bool {
				_, _, ok := recordOf(get(t, c, widgetsGVR, ns, "w"))
				return r.count("size", "w") == 1 && ok
			})
			if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the delete handler fails twice", func() bool { return r.count("cleanup", "w") >= 2 })
			if finalizer {
				if gone() {
					t.Fatal("the first widget went while its delete handler failed: the finalizer did not hold it")
				}
				patch(t, c, widgetsGVR, ns, "w", `{"metadata":{"finalizers":null}}`)
			}
			eventually(t, "the first widget goes", gone)
			second := createWidget(t, c, ns, "w", `{"size":1}`)
			if second.GetUID() == first.GetUID() {
				t.Fatalf("the second widget has the first one's uid %s", first.GetUID())
			}

			// While the first incarnation's deletion is retried, nothing of
			// it reaches the second widget, and its handlers wait.
			check := func(u *unstructured.Unstructured) {
				t.Helper()
				if inc, fails, ok := recordOf(u); ok && (inc != string(second.GetUID()) || len(fails) > 0) {
					t.Fatalf("the second widget carries a record of incarnation %s (the first is %s) with failures %v", inc, first.GetUID(), fails)
				}
				if _, ok := conditionsOf(u)["cleanup"]; ok {
					t.Fatalf("the second widget carries the first one's cleanup condition: %v", conditionsOf(u)["cleanup"])
				}
				if finalizer && len(u.GetAnnotations()) > 0 && !slices.Contains(u.GetFinalizers(), k8s.Finalizer) {
					t.Fatalf("the second widget was claimed but has no finalizer %s: %v", k8s.Finalizer, u.GetFinalizers())
				}
			}
			failingRuns := r.count("cleanup", "w")
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				check(get(t, c, widgetsGVR, ns, "w"))
			}
			if n := r.count("cleanup", "w"); n <= failingRuns {
				t.Errorf("the delete handler did not run again within 1s of backoff capped at 400ms (%d runs)", n)
			}
			if n := r.count("size", "w"); n != 1 {
				t.Errorf("size ran %d times before the first widget's deletion finished, want once (on the first widget)", n)
			}

			failing.Store(false)
			eventually(t, "the deletion finishes and size runs on the second widget", func() bool {
				u := get(t, c, widgetsGVR, ns, "w")
				inc, _, ok := recordOf(u)
				return r.count("size", "w") == 2 && ok && inc == string(second.GetUID())
			})
			steady(t, "handler runs", time.Second, r.total)
			last := get(t, c, widgetsGVR, ns, "w")
			check(last)
			if finalizer && !slices.Contains(last.GetFinalizers(), k8s.Finalizer) {
				t.Errorf("the second widget lost its finalizer: %v", last.GetFinalizers())
			}
			for _, ev := range r.of("cleanup", "w") {
				if uid := (&unstructured.Unstructured{Object: ev.Old}).GetUID(); uid != first.GetUID() {
					t.Errorf("the delete handler ran with the state of %s, want the first widget %s", uid, first.GetUID())
				}
			}
			mu.Lock()
			if len(cleanedUp) != 1 {
				t.Errorf("the delete handler succeeded %d times, want once: %v", len(cleanedUp), cleanedUp)
			}
			mu.Unlock()
			ev := r.of("size", "w")[1]
			if ev.Type != opbus.Create || (&unstructured.Unstructured{Object: ev.New}).GetUID() != second.GetUID() {
				t.Errorf("size ran on %s as %v, want a create of the second widget %s", (&unstructured.Unstructured{Object: ev.New}).GetUID(), ev.Type, second.GetUID())
			}
		})
	}
}
