package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opbus/opbus"
)

// The dispatch family measures observed updates per second from a source to empty
// handlers: 10,000 Pods, 20 handlers each subscribed to a different field, a stream of
// updates each of which changes a couple of fields. Every approach is driven by the same
// harness: feeder goroutines (one per CPU, as informers' event handlers run) deliver
// the updates of a round, one per key, and the round ends when every handler call it
// caused has returned. Rounds keep each key's updates in order without a backlog, so
// that neither side can coalesce updates (the bus past Options.MaxBacklog, the
// workqueue by merging equal items) and both do all the work.

const (
	// dispatchKeys is how many objects the stream updates, round-robin.
	dispatchKeys = 10_000
	// dispatchWorkers is the size of both worker pools: the bus's default.
	dispatchWorkers = 4
)

// dispatchFields are the 20 subscriptions, one per handler: the fields of the root
// package's BenchmarkDispatch.
var dispatchFields = []string{
	"spec.containers", "status.containerStatuses", "status.phase", "metadata.labels",
	"metadata.annotations", "spec.volumes", "status.conditions", "spec.nodeName",
	"status.podIP", "spec.tolerations", "metadata.ownerReferences",
	"spec.containers[name=app].image", "status.containerStatuses[*].ready", "status.hostIP",
	"spec.serviceAccountName", "spec.restartPolicy", "metadata.labels.app", "status.qosClass",
	"spec.dnsPolicy", "status.startTime",
}

// k8sListKeys mirrors adapters/k8s.ListKeys, which the Kubernetes adapter puts in the
// bus's options; this module does not import the adapter.
var k8sListKeys = map[string]string{
	"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
	"containerStatuses": "name", "initContainerStatuses": "name", "ephemeralContainerStatuses": "name",
	"conditions": "type", "env": "name", "ports": "containerPort", "volumes": "name",
	"volumeMounts": "mountPath",
}

// A podEdit is one of the writes the update stream is made of: two fields of the Pod
// changed together, as one writer changes them.
type podEdit struct {
	name  string
	apply func(pod, crashed map[string]any)
}

// podEdits are toggled one at a time: each update switches one edit on or off, so
// consecutive versions of an object differ in exactly the two fields of that edit
// (plus metadata.resourceVersion, which every write bumps and nobody subscribes to).
var podEdits = []podEdit{
	{"kubelet: container app terminates", func(pod, crashed map[string]any) {
		// status.containerStatuses as in pod-new.json (app: running → terminated,
		// ready false), and the Ready condition going False.
		status := pod["status"].(map[string]any)
		status["containerStatuses"] = crashed["status"].(map[string]any)["containerStatuses"]
		for _, c := range status["conditions"].([]any) {
			if c := c.(map[string]any); c["type"] == "Ready" {
				c["status"] = "False"
			}
		}
	}},
	{"user: relabel and annotate", func(pod, _ map[string]any) {
		md := pod["metadata"].(map[string]any)
		md["labels"].(map[string]any)["app"] = "web-canary"
		md["annotations"].(map[string]any)["kubectl.kubernetes.io/restartedAt"] = "2026-03-15T08:00:00Z"
	}},
	{"user: new image and toleration", func(pod, _ map[string]any) {
		spec := pod["spec"].(map[string]any)
		for _, c := range spec["containers"].([]any) {
			if c := c.(map[string]any); c["name"] == "app" {
				c["image"] = "registry.example.com/shop/web:1.42.4"
			}
		}
		spec["tolerations"].([]any)[0].(map[string]any)["tolerationSeconds"] = int64(600)
	}},
	{"kubelet: new addresses", func(pod, _ map[string]any) {
		status := pod["status"].(map[string]any)
		status["podIP"] = "10.244.3.99"
		status["hostIP"] = "192.0.2.14"
	}},
	{"kubelet: phase and start time", func(pod, _ map[string]any) {
		status := pod["status"].(map[string]any)
		status["phase"] = "Failed"
		status["startTime"] = "2026-03-15T08:00:05Z"
	}},
}

// editOn reports whether edit e is on in version v of the cycle of 2·len(podEdits)
// versions: none, then the edits switched on one by one, then off one by one.
func editOn(v, e int) bool {
	n := len(podEdits)
	if v <= n {
		return e < v
	}
	return e >= v-n
}

// podStream is the update stream: for each key, the versions of its Pod in the cycle.
// Versions of one key share no maps or lists (each version of the template is decoded
// separately, as each watch event is), so no comparison can shortcut on identical
// pointers; versions of different keys share everything but the top-level map and
// metadata, which hold the name.
type podStream struct {
	versions int
	objs     [][]*unstructured.Unstructured // [key][version]
	keys     []opbus.Key
	reqs     []reconcile.Request
}

// update returns the key and the old and new object of update u of the stream. The
// first version of every object is the state before update 0.
func (s *podStream) update(u int) (k int, old, new *unstructured.Unstructured) {
	k = u % len(s.keys)
	step := u/len(s.keys) + 1
	return k, s.objs[k][(step-1)%s.versions], s.objs[k][step%s.versions]
}

var podStreamOnce = sync.OnceValues(func() (*podStream, error) { return newPodStream(dispatchKeys) })

func newPodStream(keys int) (*podStream, error) {
	oldJSON, err := readFixture("pod-old.json")
	if err != nil {
		return nil, err
	}
	newJSON, err := readFixture("pod-new.json")
	if err != nil {
		return nil, err
	}
	nv := 2 * len(podEdits)
	templates := make([]map[string]any, nv)
	for v := range templates {
		pod, err1 := decodeObject(oldJSON)
		crashed, err2 := decodeObject(newJSON)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		for e, ed := range podEdits {
			if editOn(v, e) {
				ed.apply(pod, crashed)
			}
		}
		templates[v] = pod
	}
	s := &podStream{versions: nv, objs: make([][]*unstructured.Unstructured, keys),
		keys: make([]opbus.Key, keys), reqs: make([]reconcile.Request, keys)}
	for k := range keys {
		name := fmt.Sprintf("web-7d9c5b8f6d-%05d", k)
		s.keys[k] = opbus.Key{Kind: "Pod", Namespace: "shop", Name: name}
		s.reqs[k] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: name}}
		s.objs[k] = make([]*unstructured.Unstructured, nv)
		for v, t := range templates {
			obj := maps.Clone(t)
			md := maps.Clone(t["metadata"].(map[string]any))
			md["name"] = name
			md["resourceVersion"] = strconv.Itoa(48213977 + k*nv + v)
			obj["metadata"] = md
			s.objs[k][v] = &unstructured.Unstructured{Object: obj}
		}
	}
	return s, nil
}

// A dispatchTarget is one approach: it takes updates from the feeders and runs the
// handlers they concern.
type dispatchTarget interface {
	// update delivers update (old → new) of key k; it is called by feeder f, and
	// concurrently by the other feeders for other keys.
	update(ctx context.Context, f, k int, old, new *unstructured.Unstructured) error
	// settle returns once every handler call caused by the updates delivered so far
	// has returned.
	settle(ctx context.Context) error
	// calls returns how many handler calls were made so far.
	calls() uint64
	close()
}

// counter is a per-feeder count, padded so that feeders do not share a cache line.
type counter struct {
	n uint64
	_ [56]byte
}

func sum(cs []counter) uint64 {
	var n uint64
	for i := range cs {
		n += atomic.LoadUint64(&cs[i].n)
	}
	return n
}

// feeders is how many goroutines deliver updates.
func feeders() int { return runtime.GOMAXPROCS(0) }

// busTarget is opbus: bus.Run with its workers, bus.Observe from the feeders,
// bus.Wait to settle.
type busTarget struct {
	bus    *opbus.Bus
	keys   []opbus.Key
	cancel context.CancelFunc
	done   chan error
}

func newBusTarget(s *podStream) (*busTarget, error) {
	bus, err := opbus.New(&opbus.Options{Workers: dispatchWorkers, ListKeys: k8sListKeys})
	if err != nil {
		return nil, err
	}
	for i, f := range dispatchFields {
		err := bus.Handle(fmt.Sprintf("h%02d", i), func(context.Context, *opbus.Event) (opbus.Status, error) {
			return opbus.Status{}, nil
		}, opbus.On{Fields: []string{f}})
		if err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &busTarget{bus: bus, keys: s.keys, cancel: cancel, done: make(chan error, 1)}
	go func() { t.done <- bus.Run(ctx) }()
	// The first version of every object: its creation, outside the timed loop.
	for k := range s.keys {
		if err := bus.Observe(ctx, s.keys[k], s.objs[k][0].Object); err != nil {
			t.close()
			return nil, err
		}
	}
	if err := bus.Wait(ctx); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *busTarget) update(ctx context.Context, _, k int, _, new *unstructured.Unstructured) error {
	return t.bus.Observe(ctx, t.keys[k], new.Object)
}

func (t *busTarget) settle(ctx context.Context) error { return t.bus.Wait(ctx) }
func (t *busTarget) calls() uint64                    { return t.bus.Stats().Ran }

func (t *busTarget) close() {
	t.cancel()
	<-t.done
}

// fieldGetter returns the value of one subscribed field, the way a controller-runtime
// user writes it: unstructured.NestedFieldNoCopy for a plain path, a loop over the list
// for an element chosen by name or for one field of every element.
type fieldGetter func(obj map[string]any) any

func fieldGetters() []fieldGetter {
	gs := make([]fieldGetter, len(dispatchFields))
	for i, f := range dispatchFields {
		switch f {
		case "spec.containers[name=app].image":
			gs[i] = func(obj map[string]any) any {
				v, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "containers")
				cs, _ := v.([]any)
				for _, c := range cs {
					if c, ok := c.(map[string]any); ok && c["name"] == "app" {
						return c["image"]
					}
				}
				return nil
			}
		case "status.containerStatuses[*].ready":
			gs[i] = func(obj map[string]any) any {
				v, _, _ := unstructured.NestedFieldNoCopy(obj, "status", "containerStatuses")
				cs, _ := v.([]any)
				ready := make([]any, 0, len(cs))
				for _, c := range cs {
					if c, ok := c.(map[string]any); ok {
						ready = append(ready, c["ready"])
					}
				}
				return ready
			}
		default:
			path := splitDots(f)
			gs[i] = func(obj map[string]any) any {
				v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
				return v
			}
		}
	}
	return gs
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// queueItem is what the pipeline queues: a handler and the object it is to handle, as
// a controller queues a reconcile.Request per controller.
type queueItem struct {
	handler int
	req     reconcile.Request
}

// pipelineTarget is the controller-runtime way: per update, 20 predicates (one per
// handler) decide from the old and new object whether their field changed, comparing
// the field's values with equality.Semantic.DeepEqual; each match adds (handler, key)
// to a client-go typed rate-limiting workqueue, which workers drain, calling the
// handler's empty reconciler.
type pipelineTarget struct {
	preds       []predicate.Predicate
	reconcilers []reconcile.Reconciler
	q           workqueue.TypedRateLimitingInterface[queueItem]
	reqs        []reconcile.Request
	pending     sync.WaitGroup // queued items not yet handled
	workers     sync.WaitGroup
	counts      []counter
}

func newPipelineTarget(s *podStream) *pipelineTarget {
	t := &pipelineTarget{
		// Without a name the queue records no metrics; controller-runtime's own
		// queues do (Prometheus), which this leaves out, in the pipeline's favour.
		q: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[queueItem](),
			workqueue.TypedRateLimitingQueueConfig[queueItem]{}),
		reqs:   s.reqs,
		counts: make([]counter, feeders()),
	}
	for _, get := range fieldGetters() {
		t.preds = append(t.preds, predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			a := get(e.ObjectOld.(*unstructured.Unstructured).Object)
			b := get(e.ObjectNew.(*unstructured.Unstructured).Object)
			return !equality.Semantic.DeepEqual(a, b)
		}})
		t.reconcilers = append(t.reconcilers, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}))
	}
	ctx := context.Background()
	for range dispatchWorkers {
		t.workers.Go(func() {
			for {
				it, shutdown := t.q.Get()
				if shutdown {
					return
				}
				if _, err := t.reconcilers[it.handler].Reconcile(ctx, it.req); err != nil {
					t.q.AddRateLimited(it)
				} else {
					t.q.Forget(it)
				}
				t.q.Done(it)
				t.pending.Done()
			}
		})
	}
	return t
}

func (t *pipelineTarget) update(_ context.Context, f, k int, old, new *unstructured.Unstructured) error {
	e := event.UpdateEvent{ObjectOld: old, ObjectNew: new}
	for h, p := range t.preds {
		if p.Update(e) {
			t.counts[f].n++
			t.pending.Add(1)
			t.q.Add(queueItem{handler: h, req: t.reqs[k]})
		}
	}
	return nil
}

func (t *pipelineTarget) settle(context.Context) error {
	t.pending.Wait()
	return nil
}

func (t *pipelineTarget) calls() uint64 { return sum(t.counts) }

func (t *pipelineTarget) close() {
	t.q.ShutDown()
	t.workers.Wait()
}

// floorTarget is the floor: per update, for each handler, look up its field on both
// sides (the same getters as the predicates), walk the two values, and call the empty
// handler at once on a difference. No queue, no workers, nothing kept.
type floorTarget struct {
	getters  []fieldGetter
	handlers []func()
	counts   []counter
}

func newFloorTarget() *floorTarget {
	t := &floorTarget{getters: fieldGetters(), counts: make([]counter, feeders())}
	for range t.getters {
		t.handlers = append(t.handlers, func() {})
	}
	return t
}

func (t *floorTarget) update(_ context.Context, f, _ int, old, new *unstructured.Unstructured) error {
	for h, get := range t.getters {
		if walkDiffers(get(old.Object), get(new.Object)) {
			t.counts[f].n++
			t.handlers[h]()
		}
	}
	return nil
}

func (t *floorTarget) settle(context.Context) error { return nil }
func (t *floorTarget) calls() uint64                { return sum(t.counts) }
func (t *floorTarget) close()                       {}

// dispatchEntry is one approach in the family, with its place in the stream.
type dispatchEntry struct {
	name   string // as in DispatchPeers
	target dispatchTarget
	next   int // the next update of the stream
}

// dispatchEntries builds the approaches in table order; the bus's setup dispatches the
// creation of every object, which takes a moment.
func dispatchEntries(s *podStream) ([]*dispatchEntry, error) {
	bus, err := newBusTarget(s)
	if err != nil {
		return nil, err
	}
	targets := []dispatchTarget{bus, newPipelineTarget(s), newFloorTarget()}
	entries := make([]*dispatchEntry, len(targets))
	for i, t := range targets {
		entries[i] = &dispatchEntry{name: dispatchNames[i], target: t}
	}
	return entries, nil
}

// dispatchNames name the entries dispatchEntries returns, in order.
var dispatchNames = []string{Opbus, "workqueue-predicate", Floor}

// run delivers the next n updates of the stream and waits until they are handled. It
// returns how many handler calls they caused.
func (e *dispatchEntry) run(ctx context.Context, s *podStream, n int) (uint64, error) {
	before := e.target.calls()
	nf := feeders()
	for n > 0 {
		// A round: consecutive updates up to the end of the current pass over the
		// keys, so each key appears at most once; split between the feeders.
		u0 := e.next
		m := min(n, len(s.keys)-u0%len(s.keys))
		var wg sync.WaitGroup
		errs := make([]error, nf)
		for f := range nf {
			lo, hi := u0+m*f/nf, u0+m*(f+1)/nf
			wg.Go(func() {
				for u := lo; u < hi; u++ {
					k, old, new := s.update(u)
					if err := e.target.update(ctx, f, k, old, new); err != nil {
						errs[f] = err
						return
					}
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, err
		}
		if err := e.target.settle(ctx); err != nil {
			return 0, err
		}
		e.next += m
		n -= m
	}
	return e.target.calls() - before, nil
}

// BenchmarkDispatch: BenchmarkDispatch/pod-10k/<approach>. One op is one update;
// besides ns/op (= ns/update) each result reports updates/s and handler-calls/update,
// which must be equal across approaches (TestDispatchAgree checks it).
func BenchmarkDispatch(b *testing.B) {
	s, err := podStreamOnce()
	if err != nil {
		b.Fatal(err)
	}
	entries, err := dispatchEntries(s)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, e := range entries {
			e.target.close()
		}
	})
	ctx := context.Background()
	b.Run("pod-10k", func(b *testing.B) {
		for _, e := range entries {
			b.Run(e.name, func(b *testing.B) {
				b.ReportAllocs()
				b.ResetTimer()
				calls, err := e.run(ctx, s, b.N)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				sec := b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N)/sec, "updates/s")
				b.ReportMetric(sec*1e9/float64(b.N), "ns/update")
				b.ReportMetric(float64(calls)/float64(b.N), "calls/update")
			})
		}
	})
}

// TestDispatchAgree runs every approach over two full cycles of the stream (every edit
// switched on and off twice) on a few hundred keys and checks that they make the same
// handler calls: the same number, and as many as the edits touch subscriptions.
func TestDispatchAgree(t *testing.T) {
	const keys = 300
	s, err := newPodStream(keys)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := dispatchEntries(s)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, e := range entries {
			e.target.close()
		}
	}()
	// Each edit changes two fields; the subscriptions it touches, over the 20 fields:
	// container terminates → containerStatuses, [*].ready, conditions; relabel →
	// labels, annotations, labels.app; image and toleration → containers,
	// containers[name=app].image, tolerations; addresses → podIP, hostIP; phase and
	// start time → phase, startTime. 13 calls per edit switched on and off: 26 per cycle.
	n := 2 * s.versions * keys
	want := uint64(2 * 26 * keys)
	for _, e := range entries {
		got, err := e.run(context.Background(), s, n)
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if got != want {
			t.Errorf("%s: %d handler calls for %d updates, want %d", e.name, got, n, want)
		}
	}
}
