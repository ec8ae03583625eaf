package k8s_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// seen counts handler runs per object and value, and keeps the order in
// which each object's values were handled.
type seen struct {
	mu    sync.Mutex
	runs  map[string]map[int64]int // object → value → runs
	order map[string][]int64       // object → values, in the order handled
}

func (s *seen) add(name string, v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		s.runs, s.order = map[string]map[int64]int{}, map[string][]int64{}
	}
	if s.runs[name] == nil {
		s.runs[name] = map[int64]int{}
	}
	s.runs[name][v]++
	s.order[name] = append(s.order[name], v)
}

// last returns the value of the last run on name, or -1.
func (s *seen) last(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.order[name]; len(l) > 0 {
		return l[len(l)-1]
	}
	return -1
}

// total returns the number of runs.
func (s *seen) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.order {
		n += len(l)
	}
	return n
}

// check reports values handled more than once, and values handled after a
// later one.
func (s *seen) check(t *testing.T, what string) (handled int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, runs := range s.runs {
		for v, n := range runs {
			if n > 1 {
				t.Errorf("%s %s: value %d handled %d times, want once", what, name, v, n)
			}
		}
		handled += len(runs)
		order := s.order[name]
		for i := 1; i < len(order); i++ {
			if order[i] < order[i-1] {
				t.Errorf("%s %s: value %d handled after %d: out of order (%v)", what, name, order[i], order[i-1], order)
				break
			}
		}
	}
	return handled
}

// writer changes a value of several objects in a loop, one request at a
// time per object, retrying a value that failed (such as while the API
// server is down) until it is written.
type writer struct {
	set     func(ctx context.Context, name string, v int64) error
	names   []string
	every   time.Duration
	written atomic.Int64 // values written
	failed  atomic.Int64 // attempts that failed
	last    sync.Map     // name → int64, the last value written

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (w *writer) start() {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	for _, name := range w.names {
		w.wg.Go(func() {
			for v := int64(1); ctx.Err() == nil; {
				rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
				err := w.set(rctx, name, v)
				rcancel()
				if err != nil {
					w.failed.Add(1)
				} else {
					w.last.Store(name, v)
					w.written.Add(1)
					v++
				}
				select {
				case <-ctx.Done():
				case <-time.After(w.every):
				}
			}
		})
	}
}

func (w *writer) stop() {
	w.cancel()
	w.wg.Wait()
}

// final returns the last value written to name. A write whose answer was
// lost may have taken effect too, so the caller reads the object to know.
func (w *writer) final(name string) int64 {
	v, _ := w.last.Load(name)
	n, _ := v.(int64)
	return n
}

// TestAPIServerRestart restarts the API server while Pods and Widgets
// change, before, during and after the restart: the watches recover, the
// handlers see the final value of every object, no value is handled twice
// or after a later one, and the statuses written back — the status
// annotation and Events of the Pods, the conditions of the Widgets —
// converge to the final slots.
func TestAPIServerRestart(t *testing.T) {
	t.Parallel()
	env := kubetest.Start(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	const objects = 4
	var podNames, widgetNames []string
	for i := range objects {
		podNames = append(podNames, fmt.Sprintf("pod-%d", i))
		widgetNames = append(widgetNames, fmt.Sprintf("widget-%d", i))
		createPod(t, c, ns, podNames[i])
		createWidget(t, c, ns, widgetNames[i], `{"size":0}`)
	}

	var pods, widgets seen
	var podCreates, widgetCreates atomic.Int64
	podOp := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: podsGVR, Namespaces: []string{ns}}}}, func(b *opbus.Bus) {
		must(t, b.Handle("restarts", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.Type == opbus.Create {
				podCreates.Add(1)
			}
			n, ok := restartCount(ev.New)
			if !ok {
				return opbus.Waiting("no container status yet"), nil
			}
			pods.add(ev.Key.Name, n)
			return restartsStatus(n), nil
		}, opbus.On{Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}}))
	})
	k8s.SetEventBurst(podOp.src, 1<<20)

	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}, func(b *opbus.Bus) {
		must(t, b.Handle("size", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.Type == opbus.Create {
				widgetCreates.Add(1)
			}
			size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
			widgets.add(ev.Key.Name, size)
			return sizeStatus(ev), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
	})
	eventually(t, "both operators handle every object", func() bool {
		return podCreates.Load() == objects && widgetCreates.Load() == objects
	})

	every := 100 * time.Millisecond
	podWriter := &writer{names: podNames, every: every, set: func(ctx context.Context, name string, v int64) error {
		body := fmt.Sprintf(`{"status":{"containerStatuses":[{"name":"app","image":"busybox:1.36","imageID":"","ready":true,`+
			`"restartCount":%d,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}]}}`, v)
		_, err := c.Resource(podsGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
		return err
	}}
	widgetWriter := &writer{names: widgetNames, every: every, set: func(ctx context.Context, name string, v int64) error {
		_, err := c.Resource(widgetsGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"size":%d}}`, v), metav1.PatchOptions{})
		return err
	}}
	podWriter.start()
	widgetWriter.start()
	time.Sleep(2 * time.Second)
	before := podWriter.written.Load() + widgetWriter.written.Load()
	env.RestartAPIServer(t)
	during := podWriter.written.Load() + widgetWriter.written.Load() - before
	restarted := podWriter.written.Load() + widgetWriter.written.Load()
	time.Sleep(2 * time.Second)
	podWriter.stop()
	widgetWriter.stop()
	after := podWriter.written.Load() + widgetWriter.written.Load() - restarted
	t.Logf("values written: %d before the restart, %d while it restarted, %d after; %d attempts failed",
		before, during, after, podWriter.failed.Load()+widgetWriter.failed.Load())
	if after == 0 {
		t.Fatal("no value was written after the restart")
	}

	// What the objects hold in the end, which the writers may not know if
	// a request failed after it took effect.
	finalPods, finalWidgets := map[string]int64{}, map[string]int64{}
	for _, name := range podNames {
		n, _ := restartCount(get(t, c, podsGVR, ns, name).Object)
		finalPods[name] = n
		if w := podWriter.final(name); n < w {
			t.Fatalf("pod %s: restartCount %d, but %d was written", name, n, w)
		}
	}
	for _, name := range widgetNames {
		n, _, _ := unstructured.NestedInt64(get(t, c, widgetsGVR, ns, name).Object, "spec", "size")
		finalWidgets[name] = n
	}

	eventually(t, "the handlers see the final value of every object", func() bool {
		for name, v := range finalPods {
			if pods.last(name) != v {
				return false
			}
		}
		for name, v := range finalWidgets {
			if widgets.last(name) != v {
				return false
			}
		}
		return true
	})
	eventually(t, "the Pods' status annotations show the final values", func() bool {
		for name, v := range finalPods {
			s, ok := annotationOf(get(t, c, podsGVR, ns, name), k8s.AnnotationStatus)
			var st opbus.Status
			if !ok || json.Unmarshal([]byte(s), &st) != nil || st != restartsStatus(v) {
				return false
			}
		}
		return true
	})
	for name, v := range finalWidgets {
		status, msg := metav1.ConditionTrue, fmt.Sprintf("size %d", v)
		if v > 3 {
			status, msg = metav1.ConditionFalse, fmt.Sprintf("size %d is over 3", v)
		}
		waitConditions(t, c, ns, name, status, msg)
	}
	// An Event reports each Pod's final status (the Event limit of rule K8,
	// tested on its own, is raised for this test: a Pod's status changes
	// more often here than the burst allows).
	eventually(t, "an Event reports each Pod's final status", func() bool {
		l, err := c.Resource(podsGVR.GroupVersion().WithResource("events")).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		found := map[string]bool{}
		for _, e := range l.Items {
			msg, _, _ := unstructured.NestedString(e.Object, "message")
			name, _, _ := unstructured.NestedString(e.Object, "involvedObject", "name")
			if v, ok := finalPods[name]; ok && strings.HasPrefix(msg, restartsStatus(v).Message+" (was ") {
				found[name] = true
			}
		}
		return len(found) == len(finalPods)
	})
	steady(t, "handler runs", 2*time.Second, func() string {
		return fmt.Sprintf("pods %d, widgets %d", pods.total(), widgets.total())
	})
	handled := pods.check(t, "pod") + widgets.check(t, "widget")
	if n := podCreates.Load() + widgetCreates.Load(); n != 2*objects {
		t.Errorf("%d handler runs on create, want %d: the restart must not make objects new again", n, 2*objects)
	}
	t.Logf("%d distinct values handled of %d written; the others were superseded while the watches were down (a re-list shows only the latest state)",
		handled, podWriter.written.Load()+widgetWriter.written.Load())
}

// restartsStatus is the status of the Pods' handler for a restart count:
// blocked from 10 restarts on.
func restartsStatus(n int64) opbus.Status {
	if n >= 10 {
		return opbus.Blocked(fmt.Sprintf("restarted %d times", n))
	}
	return opbus.Active(fmt.Sprintf("restarted %d times", n))
}

// TestStatusConflictsRetried races the adapter's writes of a Widget's
// conditions with another writer of the same Widget's status: the API
// server answers some of the adapter's patches with 409 Conflict, which
// the adapter retries, and the conditions end up matching the last slots
// while the other writer's field is kept.
func TestStatusConflictsRetried(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var conflicts, statusPatches atomic.Int64
	cfg := env.AdminConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/status") && err == nil {
				statusPatches.Add(1)
				if resp.StatusCode == http.StatusConflict {
					conflicts.Add(1)
				}
			}
			return resp, err
		})
	}
	var sizes seen
	var failures atomic.Int64
	start(t, k8s.Options{Config: cfg, Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}, func(b *opbus.Bus) {
		must(t, b.Handle("size", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
			sizes.add(ev.Key.Name, size)
			return sizeStatus(ev), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
	})
	createWidget(t, c, ns, "w", `{"size":0}`)
	waitConditions(t, c, ns, "w", metav1.ConditionTrue, "size 0")

	stopWriter := conflictingWriter(t, c, ns, "w", &failures)
	const last = 12
	for size := 1; size <= last; size++ {
		patch(t, c, widgetsGVR, ns, "w", fmt.Sprintf(`{"spec":{"size":%d}}`, size))
		eventually(t, fmt.Sprintf("size %d is handled", size), func() bool { return sizes.last("w") == int64(size) })
	}
	waitConditions(t, c, ns, "w", metav1.ConditionFalse, fmt.Sprintf("size %d is over 3", last))
	beat := stopWriter()
	if failures.Load() > 0 {
		t.Errorf("the other writer failed %d times", failures.Load())
	}
	t.Logf("%d conflicts in %d patches of the status by the adapter", conflicts.Load(), statusPatches.Load())
	if conflicts.Load() == 0 {
		t.Fatal("no patch of the adapter conflicted: the test did not exercise the retry")
	}
	w := get(t, c, widgetsGVR, ns, "w")
	if got, _, _ := unstructured.NestedInt64(w.Object, "status", "beat"); got != beat {
		t.Errorf("status.beat = %d, want %d, the other writer's last: the adapter's patch lost it", got, beat)
	}
	steady(t, "the widget's conditions", time.Second, func() string { return fmt.Sprint(conditionsOf(get(t, c, widgetsGVR, ns, "w"))) })
	sizes.check(t, "widget")
}

// conflictingWriter updates status.beat of a widget in a loop, each time
// with the widget's resource version as a precondition, as a controller
// that owns part of the status does, until the returned function is
// called; that returns the last beat written. Its own conflicts are
// retried; other failures are counted in failures.
func conflictingWriter(t *testing.T, c dynamic.Interface, ns, name string, failures *atomic.Int64) (stop func() int64) {
	t.Helper()
	// Requests are never canceled: one canceled in flight may still have
	// been applied, and the last beat would be unknown.
	ctx := context.Background()
	var quit atomic.Bool
	var beat atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !quit.Load() {
			u, err := c.Resource(widgetsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				n := beat.Load() + 1
				body := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"status":{"beat":%d}}`, u.GetResourceVersion(), n)
				_, err = c.Resource(widgetsGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
				if err == nil {
					beat.Store(n)
				}
			}
			if err != nil && !apierrors.IsConflict(err) {
				failures.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	return func() int64 {
		quit.Store(true)
		wg.Wait()
		return beat.Load()
	}
}
