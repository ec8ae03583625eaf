package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// countWrites returns a copy of cfg whose client counts the writes that go
// through (PATCH, PUT, POST and DELETE answered with a 2xx) on the resource
// named resource (subresources included).
func countWrites(cfg *rest.Config, resource string) (*rest.Config, *atomic.Int64) {
	var n atomic.Int64
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && req.Method != http.MethodGet && resp.StatusCode/100 == 2 &&
				strings.Contains(req.URL.Path, "/"+resource+"/") {
				n.Add(1)
			}
			return resp, err
		})
	}
	return cfg, &n
}

// quiet waits until *n stays the same for d, and fails the test if it
// does not within waitFor: the adapter's writes stop.
func quiet(t *testing.T, what string, n *atomic.Int64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		v, since := n.Load(), time.Now()
		for n.Load() == v && time.Since(since) < d {
			time.Sleep(20 * time.Millisecond)
		}
		if n.Load() == v {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still writing after %v", what, waitFor)
		}
	}
}

// wroteOnce checks that the adapter's writes, *n, went from before to
// before+1 and stay there for a second: one write-back per foreign edit,
// and no write loop after it. The client counts a write when its answer
// has come back, which may be after another client sees its effect.
func wroteOnce(t *testing.T, what string, n *atomic.Int64, before int64) {
	t.Helper()
	eventually(t, what+": the write-back counted", func() bool { return n.Load() > before })
	steady(t, what+": the adapter's writes", time.Second, n.Load)
	if got := n.Load() - before; got != 1 {
		t.Errorf("%s: %d writes by the adapter, want 1 (the write-back)", what, got)
	}
}

// TestConditionsWrittenBack edits the conditions of a Blocked Widget with
// another client, in four ways: the list removed, the list emptied, Ready
// turned True, and the slot's condition alone removed. Each time the
// adapter writes back the slot's condition and Ready, False, Blocked, with
// the size handler's message and the generation it handled, in exactly one
// write, with no write after it for a second, and without running a
// handler.
func TestConditionsWrittenBack(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	cfg, writes := countWrites(env.AdminConfig(), "widgets")

	var r runs
	start(t, k8s.Options{Config: cfg, Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}, widgetHandlers(t, &r))
	createWidget(t, c, ns, "w", `{"size":5}`)
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":6}}`) // generation 2
	blocked := func() error {
		u := get(t, c, widgetsGVR, ns, "w")
		conds := conditionsOf(u)
		if u.GetGeneration() != 2 {
			return fmt.Errorf("generation %d, want 2", u.GetGeneration())
		}
		return errors.Join(
			checkCondition(conds, "Ready", metav1.ConditionFalse, "Blocked", "size 6 is over 3", 2),
			checkCondition(conds, "Size", metav1.ConditionFalse, "Blocked", "size 6 is over 3", 2))
	}
	var err error
	eventually(t, "Ready and size False, Blocked, generation 2", func() bool { err = blocked(); return err == nil })
	ran := r.total()
	quiet(t, "the adapter's writes before the edits", writes, time.Second)

	edits := []struct {
		name string
		edit func()
	}{
		{"conditions removed", func() { patch(t, c, widgetsGVR, ns, "w", `{"status":{"conditions":null}}`, "status") }},
		{"conditions emptied", func() { patch(t, c, widgetsGVR, ns, "w", `{"status":{"conditions":[]}}`, "status") }},
		{"Ready turned True", func() {
			editConditions(t, c, ns, "w", func(m map[string]any) bool {
				if m["type"] == "Ready" {
					m["status"], m["reason"], m["message"] = "True", "Edited", "all fine"
				}
				return true
			})
		}},
		{"size removed", func() {
			editConditions(t, c, ns, "w", func(m map[string]any) bool { return m["type"] != "Size" })
		}},
	}
	for _, e := range edits {
		before := writes.Load()
		e.edit()
		deadline := time.Now().Add(waitFor)
		for err = blocked(); err != nil && time.Now().Before(deadline); err = blocked() {
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("after %s: %v", e.name, err)
		}
		wroteOnce(t, e.name, writes, before)
	}
	if n := r.total(); n != ran {
		t.Errorf("%d handler runs after the edits, want none", n-ran)
	}
}

// editConditions updates the status of a Widget with its conditions
// edited in place by keep, which returns false for those to remove.
func editConditions(t *testing.T, c dynamic.Interface, ns, name string, keep func(m map[string]any) bool) {
	t.Helper()
	u := get(t, c, widgetsGVR, ns, name)
	l, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	l = slices.DeleteFunc(l, func(e any) bool { return !keep(e.(map[string]any)) })
	if err := unstructured.SetNestedSlice(u.Object, l, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resource(widgetsGVR).Namespace(ns).UpdateStatus(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status of %s/%s: %v", ns, name, err)
	}
}

// TestRecordWrittenBack removes the record annotation of a handled Widget
// with another client, then changes it: each time the adapter writes back
// the record it holds, byte for byte, in one write and without running a
// handler. A new operator started on the Widget afterwards runs no handler:
// the values handled before stay handled.
func TestRecordWrittenBack(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	cfg, writes := countWrites(env.AdminConfig(), "widgets")
	opts := k8s.Options{Config: cfg, Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}

	var first runs
	op := start(t, opts, widgetHandlers(t, &first))
	createWidget(t, c, ns, "w", `{"size":2}`)
	var record string
	eventually(t, "a record that holds the handled values", func() bool {
		u := get(t, c, widgetsGVR, ns, "w")
		record, _ = annotationOf(u, k8s.AnnotationRecord)
		return first.count("all", "w") == 1 && first.count("size", "w") == 1 && first.count("my phase", "w") == 1 &&
			strings.Contains(record, `"digests"`) && conditionsOf(u)["Ready"].Reason == "Waiting"
	})
	ran := first.total()
	quiet(t, "the adapter's writes before the edits", writes, time.Second)

	for _, e := range []struct{ name, patch string }{
		{"record removed", fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k8s.AnnotationRecord)},
		{"record emptied", fmt.Sprintf(`{"metadata":{"annotations":{%q:""}}}`, k8s.AnnotationRecord)},
		{"record changed", fmt.Sprintf(`{"metadata":{"annotations":{%q:"{\"v\":1}"}}}`, k8s.AnnotationRecord)},
	} {
		before := writes.Load()
		patch(t, c, widgetsGVR, ns, "w", e.patch)
		var got string
		eventually(t, e.name+": the record written back", func() bool {
			got, _ = annotationOf(get(t, c, widgetsGVR, ns, "w"), k8s.AnnotationRecord)
			return got == record
		})
		wroteOnce(t, e.name, writes, before)
	}
	if n := first.total(); n != ran {
		t.Errorf("%d handler runs after the record was edited, want none", n-ran)
	}
	op.stop(t)

	var second runs
	op = start(t, opts, widgetHandlers(t, &second))
	eventually(t, "the new operator observes the Widget", func() bool { return op.bus.Stats().Observed > 0 })
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	if err := op.bus.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := second.total(); n != 0 {
		t.Errorf("%d handler runs after the restart, want none (size: %d, all: %d, my phase: %d)",
			n, second.count("size", "w"), second.count("all", "w"), second.count("my phase", "w"))
	}
}

// TestStatusAnnotationWrittenBack removes, then changes, the status
// annotation of a Blocked Widget watched in StatusAnnotation mode, with
// another client: each time the adapter writes it back in one write,
// without running a handler.
func TestStatusAnnotationWrittenBack(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	cfg, writes := countWrites(env.AdminConfig(), "widgets")

	var r runs
	start(t, k8s.Options{Config: cfg, Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}, Status: k8s.StatusAnnotation}}},
		widgetHandlers(t, &r))
	createWidget(t, c, ns, "w", `{"size":5}`)
	want := `{"level":"blocked","message":"size 5 is over 3"}`
	eventually(t, "the status annotation shows Blocked", func() bool {
		got, _ := annotationOf(get(t, c, widgetsGVR, ns, "w"), k8s.AnnotationStatus)
		return got == want
	})
	ran := r.total()
	quiet(t, "the adapter's writes before the edits", writes, time.Second)

	for _, e := range []struct{ name, patch string }{
		{"status removed", fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k8s.AnnotationStatus)},
		{"status changed", fmt.Sprintf(`{"metadata":{"annotations":{%q:"{\"level\":\"active\"}"}}}`, k8s.AnnotationStatus)},
	} {
		before := writes.Load()
		patch(t, c, widgetsGVR, ns, "w", e.patch)
		eventually(t, e.name+": the status written back", func() bool {
			got, _ := annotationOf(get(t, c, widgetsGVR, ns, "w"), k8s.AnnotationStatus)
			return got == want
		})
		wroteOnce(t, e.name, writes, before)
	}
	if n := r.total(); n != ran {
		t.Errorf("%d handler runs after the edits, want none", n-ran)
	}
}

// TestFinalizerAndRecordRemovedByHand removes the finalizer of a live
// Widget with another client, which the adapter puts back; then, while the
// Widget's deletion waits for its failing delete handler, removes its
// record: the deletion goes on (the claim writes nothing back on an object
// being deleted), and once the delete handler succeeds the Widget goes.
func TestFinalizerAndRecordRemovedByHand(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var r runs
	var release atomic.Bool
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}, Finalizer: true}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("size", r.handler(nil), opbus.On{Fields: []string{"spec.size"}}))
			must(t, b.Handle("cleanup", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				r.add(ev)
				if !release.Load() {
					return opbus.Status{}, opbus.RetryAfter(50*time.Millisecond, errors.New("not yet"))
				}
				return opbus.Status{}, nil
			}, opbus.On{Types: []opbus.EventType{opbus.Delete}}))
		})
	createWidget(t, c, ns, "w", `{"size":1}`)
	hasFinalizer := func() bool { return slices.Contains(get(t, c, widgetsGVR, ns, "w").GetFinalizers(), k8s.Finalizer) }
	eventually(t, "w is claimed with the finalizer and handled", func() bool { return hasFinalizer() && r.count("size", "w") == 1 })

	patch(t, c, widgetsGVR, ns, "w", `{"metadata":{"finalizers":null}}`)
	eventually(t, "the finalizer is back", hasFinalizer)

	if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delete handler fails", func() bool { return r.count("cleanup", "w") >= 2 })
	patch(t, c, widgetsGVR, ns, "w", fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k8s.AnnotationRecord))
	n := r.count("cleanup", "w")
	eventually(t, "the delete handler runs again", func() bool { return r.count("cleanup", "w") > n })
	release.Store(true)
	eventually(t, "w goes", func() bool {
		_, err := c.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// TestWriteBackRacesOwnWrites edits the size of four Widgets 40 times each,
// one change every 20 ms, while another client removes their conditions
// or their record in between: write-backs race with the adapter's own
// writes of newer statuses and records. Once the edits stop, the
// conditions show the last size at the last generation, the writes stop,
// and a new operator started on the Widgets runs no handler: the record on
// each Widget is the one of its last size, not an older one written back
// late.
func TestWriteBackRacesOwnWrites(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	cfg, writes := countWrites(env.AdminConfig(), "widgets")
	opts := k8s.Options{Config: cfg, Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}
	handlers := func(r *runs) func(b *opbus.Bus) {
		return func(b *opbus.Bus) {
			must(t, b.Handle("size", r.handler(func(ev *opbus.Event) opbus.Status {
				size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
				if size%2 == 1 {
					return opbus.Blocked(fmt.Sprintf("size %d is odd", size))
				}
				return opbus.Active(fmt.Sprintf("size %d", size))
			}), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		}
	}
	names := []string{"w0", "w1", "w2", "w3"}

	var first runs
	op := start(t, opts, handlers(&first))
	for _, name := range names {
		createWidget(t, c, ns, name, `{"size":0}`)
	}
	const last = 39
	t.Run("edits", func(t *testing.T) {
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				eventually(t, "the first size handled", func() bool { return conditionsOf(get(t, c, widgetsGVR, ns, name))["Size"].Message == "size 0" })
				for i := 1; i <= last; i++ {
					patch(t, c, widgetsGVR, ns, name, fmt.Sprintf(`{"spec":{"size":%d}}`, i))
					time.Sleep(time.Duration(i%3) * 5 * time.Millisecond)
					switch i % 3 {
					case 0:
						patch(t, c, widgetsGVR, ns, name, `{"status":{"conditions":null}}`, "status")
					case 1:
						patch(t, c, widgetsGVR, ns, name, `{"status":{"conditions":[]}}`, "status")
					case 2:
						patch(t, c, widgetsGVR, ns, name, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k8s.AnnotationRecord))
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
	})
	for _, name := range names {
		var err error
		eventually(t, name+": the conditions of the last size", func() bool {
			u := get(t, c, widgetsGVR, ns, name)
			conds := conditionsOf(u)
			msg := fmt.Sprintf("size %d is odd", last)
			err = errors.Join(
				checkCondition(conds, "Ready", metav1.ConditionFalse, "Blocked", msg, u.GetGeneration()),
				checkCondition(conds, "Size", metav1.ConditionFalse, "Blocked", msg, u.GetGeneration()))
			_, rec := annotationOf(u, k8s.AnnotationRecord)
			return err == nil && rec
		})
	}
	quiet(t, "the adapter's writes after the edits", writes, 2*time.Second)
	op.stop(t)

	var second runs
	op = start(t, opts, handlers(&second))
	eventually(t, "the new operator observes the Widgets", func() bool { return op.bus.Stats().Observed >= uint64(len(names)) })
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	if err := op.bus.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if n := second.count("size", name); n != 0 {
			t.Errorf("%s: %d handler runs after the restart, want none: the record written back was not the last one", name, n)
		}
	}
}
