package k8s_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

func TestMain(m *testing.M) {
	if raw := os.Getenv(replicaEnv); raw != "" {
		os.Exit(replicaMain(raw)) // a replica process (replica_test.go)
	}
	kubetest.Main(m)
}

// waitFor bounds every wait for the server, an informer or a handler.
const waitFor = 20 * time.Second

var (
	podsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	widgetsGVR = schema.GroupVersionResource{Group: "test.opbus.dev", Version: "v1", Resource: "widgets"}
	widgetKind = "Widget.test.opbus.dev"
)

// testLogger logs to the test's output: warnings and errors, or everything
// with OPBUS_TEST_LOG=debug.
func testLogger(t *testing.T) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("OPBUS_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// runs counts handler runs and keeps their events.
type runs struct {
	mu     sync.Mutex
	events []*opbus.Event
}

func (r *runs) add(ev *opbus.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := *ev
	r.events = append(r.events, &c)
}

// of returns the runs of handler on the object named name, of the given
// types (any type if none).
func (r *runs) of(handler, name string, types ...opbus.EventType) []*opbus.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*opbus.Event
	for _, ev := range r.events {
		if ev.Handler == handler && ev.Key.Name == name && (len(types) == 0 || slices.Contains(types, ev.Type)) {
			out = append(out, ev)
		}
	}
	return out
}

func (r *runs) count(handler, name string, types ...opbus.EventType) int {
	return len(r.of(handler, name, types...))
}

func (r *runs) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// handler returns a handler that records its runs in r and returns what
// result says (Active by default).
func (r *runs) handler(result func(ev *opbus.Event) opbus.Status) opbus.HandlerFunc {
	return func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		r.add(ev)
		if result == nil {
			return opbus.Active(""), nil
		}
		return result(ev), nil
	}
}

// operator is a Source and its bus, running.
type operator struct {
	src    *k8s.Source
	bus    *opbus.Bus
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// start runs an operator with opts until the test ends or stop is called.
// register adds its handlers.
func start(t *testing.T, opts k8s.Options, register func(b *opbus.Bus)) *operator {
	t.Helper()
	return startBus(t, opts, opbus.Options{}, register)
}

// startBus is start with options for the bus; a zero ShutdownTimeout
// means 10s.
func startBus(t *testing.T, opts k8s.Options, bopts opbus.Options, register func(b *opbus.Bus)) *operator {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if bopts.ShutdownTimeout == 0 {
		bopts.ShutdownTimeout = 10 * time.Second
	}
	src, err := k8s.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(&bopts))
	if err != nil {
		t.Fatal(err)
	}
	register(bus)
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{src: src, bus: bus, cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- src.Run(ctx, bus) }()
	t.Cleanup(func() { op.stop(t) })
	return op
}

// stop cancels the operator and waits for Run to return nil.
func (op *operator) stop(t *testing.T) {
	t.Helper()
	op.once.Do(func() {
		op.cancel()
		select {
		case err := <-op.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return within 30s of its context ending")
		}
	})
}

// must registers a handler or fails the test.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitFor)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// steady checks that value stays the same for d.
func steady[T comparable](t *testing.T, what string, d time.Duration, value func() T) {
	t.Helper()
	want := value()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if got := value(); got != want {
			t.Fatalf("%s: changed from %v to %v", what, want, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dynClient(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{} // such as "prefer a DNS label" for the suite's dotted Pod name
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// obj builds an unstructured object from JSON.
func obj(t *testing.T, format string, args ...any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(fmt.Appendf(nil, format, args...), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// createPod creates a Pod with one container named app.
func createPod(t *testing.T, c dynamic.Interface, ns, name string) *unstructured.Unstructured {
	t.Helper()
	p := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},
		"spec":{"containers":[{"name":"app","image":"busybox:1.36"}]}}`, name)
	got, err := c.Resource(podsGVR).Namespace(ns).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	return got
}

// patch merge-patches an object, or its status subresource with
// "status" as sub.
func patch(t *testing.T, c dynamic.Interface, gvr schema.GroupVersionResource, ns, name, body string, sub ...string) *unstructured.Unstructured {
	t.Helper()
	got, err := c.Resource(gvr).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, sub...)
	if err != nil {
		t.Fatalf("patch %s %s/%s %v: %v", gvr.Resource, ns, name, sub, err)
	}
	return got
}

func get(t *testing.T, c dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	got, err := c.Resource(gvr).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return got
}

func annotationOf(u *unstructured.Unstructured, name string) (string, bool) {
	v, ok := u.GetAnnotations()[name]
	return v, ok
}

// widgetCRD is the custom resource of the tests: namespaced, with a status
// subresource and a schema that keeps whatever spec and status hold.
const widgetCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.test.opbus.dev"},
  "spec": {
    "group": "test.opbus.dev",
    "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
      }}}
    }]
  }
}`

// ensureWidgets installs the Widget CRD, which the server then serves.
func ensureWidgets(t *testing.T, env *kubetest.Env) {
	t.Helper()
	env.InstallCRDs(t, obj(t, "%s", widgetCRD))
}

// createWidget creates a Widget with the given spec (JSON).
func createWidget(t *testing.T, c dynamic.Interface, ns, name, spec string) *unstructured.Unstructured {
	t.Helper()
	w := obj(t, `{"apiVersion":"test.opbus.dev/v1","kind":"Widget","metadata":{"name":%q},"spec":%s}`, name, spec)
	got, err := c.Resource(widgetsGVR).Namespace(ns).Create(t.Context(), w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create widget %s/%s: %v", ns, name, err)
	}
	return got
}

// conditionsOf returns an object's status.conditions by type.
func conditionsOf(u *unstructured.Unstructured) map[string]metav1.Condition {
	out := map[string]metav1.Condition{}
	l, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, e := range l {
		b, _ := json.Marshal(e)
		var c metav1.Condition
		if json.Unmarshal(b, &c) == nil {
			out[c.Type] = c
		}
	}
	return out
}
