package k8s_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// Both benchmarks run against a real API server (see kubetest) and skip
// without one, unless CI=true. Run them with
//
//	cd adapters/k8s && OPBUS_KUBE_BIN=... GOWORK=off go test -run '^$' -bench . -benchtime=1x -count 3
//
// Each iteration (b.N) is a whole measurement: 1,000 patches, or one
// operator over all the Pods; the figures are in the custom units.

const (
	// latencyPods and latencyPatches: the status patches of one iteration of
	// BenchmarkStatusLatency are spread evenly over the Pods.
	latencyPods    = 100
	latencyPatches = 1000
	// latencyRates are the paces of the paced variants, patches a second,
	// sent open-loop (each at its scheduled time, whether or not earlier
	// ones were handled), so that a backlog shows as latency rather than
	// as a slower sender.
)

var latencyRates = []int{100, 500}

// BenchmarkStatusLatency measures the time from sending a patch of a Pod's
// /status subresource, as the kubelet does, to the start of the handler
// subscribed to status.containerStatuses, over 1,000 patches spread over
// 100 Pods: one patch at a time (serial: the next is sent when the handler
// has started for the last), and paced at 100 and at 500 a second (rate=N).
// Each patch carries a sequence number in
// status.containerStatuses[0].restartCount; the handler records when it
// starts for that number. The Pods are created, claimed and handled once
// before the clock starts. The operator runs with the default settings:
// the bus's 4 workers and 16 writers (records and statuses are written
// outside the workers, opbus rule 22a), and the Source's client with no
// rate limit of its own (DefaultQPS).
//
// Reported: p50-ms, p99-ms and max-ms of that latency; for scale,
// watch-p50-ms and watch-p99-ms, the time from sending a patch to its
// event at a bare informer in the same process (the API server's and
// client-go's share), patch-p50-ms, the patch request's round trip, and
// merged-passes, the passes whose record went with the next pass's write,
// and beside-passes, those that ran while the write before was under way
// (opbus rule 22c).
func BenchmarkStatusLatency(b *testing.B) {
	skipOnCluster(b)
	env := kubetest.Shared(b)
	b.Run("workers=4", func(b *testing.B) {
		lb := newLatencyBench(b, env, 0)
		b.Run("serial", func(b *testing.B) { lb.run(b, 0) })
		for _, rate := range latencyRates {
			b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) { lb.run(b, rate) })
		}
	})
}

// newLatencyBench creates the Pods in a namespace of their own, starts an
// operator with the given number of workers (0: the default) and a probe
// on them, and
// returns once every Pod is claimed and handled, and has a first container
// status. Both stop when b ends.
func newLatencyBench(b *testing.B, env *kubetest.Env, workers int) *latencyBench {
	ns := env.Namespace(b)
	lb := &latencyBench{load: loadClient(b, env.AdminConfig()), ns: ns,
		started: map[int64]time.Time{}, watched: map[int64]time.Time{}}
	for i := range latencyPods {
		lb.names = append(lb.names, fmt.Sprintf("p%03d", i))
	}
	createPods(b, lb.load, ns, lb.names, 16)

	var warm, created atomic.Int64
	cfg := env.AdminConfig()
	bus, _ := runOperator(b, k8s.Options{
		Config:    cfg,
		Resources: []k8s.Resource{{GVR: podsGVR, Namespaces: []string{ns}}},
		Logger:    benchLogger(b),
	}, &opbus.Options{Workers: workers}, func(bus *opbus.Bus) error {
		return bus.Handle("restarts", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			now := time.Now()
			seq, ok := restartCount(ev.New)
			switch {
			case ev.Type == opbus.Create:
				created.Add(1)
			case ok && seq == 0:
				warm.Add(1)
			case ok:
				lb.record(lb.started, seq, now)
			}
			return opbus.Active("watching"), nil
		}, opbus.On{Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}})
	})

	// The probe: a bare informer on the same Pods.
	probe := dynamicinformer.NewFilteredDynamicInformer(dynamic.NewForConfigOrDie(env.AdminConfig()), podsGVR, ns, 0, cache.Indexers{}, nil).Informer()
	if _, err := probe.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		now := time.Now()
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if seq, ok := restartCount(u.Object); ok && seq > 0 {
				lb.record(lb.watched, seq, now)
			}
		}
	}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go probe.RunWithContext(ctx)

	waitUntil(b, "the operator handles every Pod's creation", time.Minute, func() bool { return created.Load() == latencyPods })
	// A first status patch on every Pod, untimed: the timed ones change a
	// containerStatuses that exists.
	for _, name := range lb.names {
		patchStatus(b, lb.load, ns, name, 0)
	}
	waitUntil(b, "the operator handles the first status of every Pod", time.Minute, func() bool { return warm.Load() == latencyPods })
	settle(b, bus)
	lb.bus = bus
	return lb
}

// latencyBench is the state BenchmarkStatusLatency's variants share: the
// Pods, and the times at which each sequence number was seen.
type latencyBench struct {
	bus   *opbus.Bus
	load  dynamic.Interface
	ns    string
	names []string

	mu      sync.Mutex
	seq     int64               // the last sequence number sent
	started map[int64]time.Time // by the handler
	watched map[int64]time.Time // by the probe
}

func (lb *latencyBench) record(m map[int64]time.Time, seq int64, t time.Time) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if _, ok := m[seq]; !ok {
		m[seq] = t
	}
}

func (lb *latencyBench) seen(m map[int64]time.Time, seq int64) (time.Time, bool) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	t, ok := m[seq]
	return t, ok
}

// run sends latencyPatches status patches per iteration, round-robin over
// the Pods, each with the next sequence number: one at a time when rate is
// 0, else paced at rate a second by a pool of senders. It reports the
// latencies of those patches.
func (lb *latencyBench) run(b *testing.B, rate int) {
	b.ReportAllocs()
	n := latencyPatches * b.N
	first := lb.seq + 1
	lb.seq += int64(n)
	sent := make([]time.Time, n)
	rtt := make([]time.Duration, n)
	send := func(i int) error {
		seq := first + int64(i)
		sent[i] = time.Now()
		err := patchStatusErr(lb.load, lb.ns, lb.names[seq%int64(len(lb.names))], seq)
		rtt[i] = time.Since(sent[i])
		return err
	}
	merged, beside := lb.bus.Stats().Merged, lb.bus.Stats().Beside
	b.ResetTimer()
	if rate == 0 {
		for i := range n {
			if err := send(i); err != nil {
				b.Fatal(err)
			}
			for {
				if _, ok := lb.seen(lb.started, first+int64(i)); ok {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
	} else {
		work := make(chan int)
		var wg sync.WaitGroup
		var failed atomic.Value
		for range 64 {
			wg.Go(func() {
				for i := range work {
					if err := send(i); err != nil {
						failed.CompareAndSwap(nil, err)
					}
				}
			})
		}
		begin, interval := time.Now(), time.Second/time.Duration(rate)
		for i := range n {
			time.Sleep(time.Until(begin.Add(time.Duration(i) * interval)))
			work <- i
		}
		close(work)
		wg.Wait()
		if err := failed.Load(); err != nil {
			b.Fatal(err)
		}
	}
	lastSent := time.Now()
	waitUntil(b, "the operator handles every patch", time.Minute, func() bool {
		for i := range n {
			if _, ok := lb.seen(lb.started, first+int64(i)); !ok {
				return false
			}
		}
		return true
	})
	b.StopTimer()
	waitUntil(b, "the probe sees every patch", time.Minute, func() bool {
		_, ok := lb.seen(lb.watched, first+int64(n)-1)
		return ok
	})

	var lat, watch []time.Duration
	for i := range n {
		t, _ := lb.seen(lb.started, first+int64(i))
		lat = append(lat, t.Sub(sent[i]))
		if w, ok := lb.seen(lb.watched, first+int64(i)); ok {
			watch = append(watch, w.Sub(sent[i]))
		}
	}
	slices.Sort(lat)
	slices.Sort(watch)
	slices.Sort(rtt)
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(percentile(watch, 50)), "watch-p50-ms")
	b.ReportMetric(ms(percentile(watch, 99)), "watch-p99-ms")
	b.ReportMetric(ms(percentile(rtt, 50)), "patch-p50-ms")
	// passes whose record went with the next pass's write (opbus rule 22a)
	b.ReportMetric(float64(lb.bus.Stats().Merged-merged), "merged-passes")
	b.ReportMetric(float64(lb.bus.Stats().Beside-beside), "beside-passes")
	b.Logf("%d patches over %d Pods, %s: to the handler p50 %v, p90 %v, p99 %v, max %v; to the probe p50 %v, p99 %v (%d of %d seen); "+
		"patch round trip p50 %v, p99 %v; all handled %v after the last was sent",
		n, len(lb.names), map[bool]string{true: "one at a time", false: fmt.Sprintf("%d/s", rate)}[rate == 0],
		percentile(lat, 50), percentile(lat, 90), percentile(lat, 99), lat[len(lat)-1],
		percentile(watch, 50), percentile(watch, 99), len(watch), n,
		percentile(rtt, 50), percentile(rtt, 99), time.Since(lastSent).Round(time.Millisecond))
}

// BenchmarkMemoryPerObject measures the operator's memory per watched
// object beyond client-go's cache: the live heap, after garbage
// collection, of a Source and its bus that have claimed and handled all
// the Pods, less that of a bare dynamic informer holding the same
// Pods as the Source's informer does (without managedFields), divided by
// the number of Pods. The bare informer runs after the operator, so both
// hold the same objects, record annotations included; the annotation's
// length is reported on its own (record-bytes), since it lives in the
// cache. Reported: B/object (bookkeeping), cache-B/object (the informer
// alone), record-bytes.
//
// The Pods, 10,000 by default (OPBUS_BENCH_PODS sets another count), live
// on a server of the benchmark's own, which it starts. One run takes 1.5
// to 3 minutes on 2 cores, most of it the operator's first pass: two
// writes for each Pod (the claim, then the record). With
// OPBUS_BENCH_HEAPPROFILE set to a file name, it writes a heap profile
// there while the operator runs.
func BenchmarkMemoryPerObject(b *testing.B) {
	b.ReportAllocs()
	skipOnCluster(b)
	n := 10000
	if v := os.Getenv("OPBUS_BENCH_PODS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("OPBUS_BENCH_PODS=%q: want a positive number", v)
		}
	}
	for range b.N {
		env := kubetest.Start(b)
		ns := env.Namespace(b)
		load := loadClient(b, env.AdminConfig())
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("p%05d", i)
		}
		begin := time.Now()
		createPods(b, load, ns, names, 32)
		b.Logf("%d Pods created in %v", n, time.Since(begin).Round(time.Millisecond))

		// The operator: claims every Pod, runs both handlers on each, saves
		// each record.
		cfg := env.AdminConfig()
		base0 := liveHeap()
		begin = time.Now()
		var handled atomic.Int64
		h := func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			handled.Add(1)
			return opbus.Status{}, nil
		}
		bus, stop := runOperator(b, k8s.Options{
			Config:    cfg,
			Resources: []k8s.Resource{{GVR: podsGVR, Namespaces: []string{ns}}},
			Logger:    benchLogger(b),
		}, &opbus.Options{Workers: 16}, func(bus *opbus.Bus) error {
			if err := bus.Handle("restarts", h, opbus.On{Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}}); err != nil {
				return err
			}
			return bus.Handle("all", h, opbus.On{Kinds: []string{"Pod"}})
		})
		waitUntil(b, "the operator handles every Pod", 3*time.Minute, func() bool { return handled.Load() == int64(2*n) })
		waitUntil(b, "every record is saved", time.Minute, func() bool { return recordsSaved(b, load, ns) == n })
		settle(b, bus)
		b.Logf("operator: %d Pods claimed and handled in %v", n, time.Since(begin).Round(time.Millisecond))
		withOperator := liveHeap() - base0
		if path := os.Getenv("OPBUS_BENCH_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, path)
		}
		runtime.KeepAlive(bus)
		stop()

		// The bare informer, on the same Pods as they are now.
		base1 := liveHeap()
		inf := dynamicinformer.NewFilteredDynamicInformer(dynamic.NewForConfigOrDie(env.AdminConfig()), podsGVR, ns, 0, cache.Indexers{}, nil).Informer()
		if err := inf.SetTransform(withoutManagedFields); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go inf.RunWithContext(ctx)
		if !cache.WaitForCacheSync(b.Context().Done(), inf.HasSynced) {
			b.Fatal("the bare informer did not sync")
		}
		bare := liveHeap() - base1
		items := inf.GetStore().List()
		recordBytes := 0
		for _, o := range items {
			recordBytes += len(o.(*unstructured.Unstructured).GetAnnotations()[k8s.AnnotationRecord])
		}
		if len(items) != n {
			b.Fatalf("the bare informer holds %d Pods, want %d", len(items), n)
		}
		runtime.KeepAlive(inf)
		cancel()

		perObject := float64(withOperator-bare) / float64(n)
		b.ReportMetric(perObject, "B/object")
		b.ReportMetric(float64(bare)/float64(n), "cache-B/object")
		b.ReportMetric(float64(recordBytes)/float64(n), "record-bytes")
		b.Logf("%d Pods: heap with the operator %d B, with a bare informer %d B (over baselines of %d B and, once the operator stopped, %d B): "+
			"%.0f B/object of bookkeeping, %.0f B/object of cache; record annotation %.0f bytes",
			n, withOperator, bare, base0, base1, perObject, float64(bare)/float64(n), float64(recordBytes)/float64(n))
	}
}

// skipOnCluster skips a benchmark on an existing cluster: its Pods would
// be scheduled and their status written by kubelets, and it may create
// thousands of them.
func skipOnCluster(b *testing.B) {
	if os.Getenv(kubetest.KubeconfigVar) != "" {
		b.Skipf("creates Pods that no kubelet may run: only on a server kubetest starts (%s), not on the cluster of %s", kubetest.BinVar, kubetest.KubeconfigVar)
	}
}

// withoutManagedFields is the transform of the Source's informers: the
// cache holds objects without metadata.managedFields.
func withoutManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if m, ok := u.Object["metadata"].(map[string]any); ok {
			delete(m, "managedFields")
		}
	}
	return obj, nil
}

// liveHeap returns the bytes of live heap objects after a full garbage
// collection.
func liveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// recordsSaved returns how many Pods in ns carry a record that is not
// empty: one their handlers' digests were saved in.
func recordsSaved(tb testing.TB, c dynamic.Interface, ns string) int {
	l, err := c.Resource(podsGVR).Namespace(ns).List(tb.Context(), metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, p := range l.Items {
		if len(p.GetAnnotations()[k8s.AnnotationRecord]) > 0 {
			n++
		}
	}
	return n
}

// loadClient returns a client without a client-side rate limit, for
// generating load.
func loadClient(tb testing.TB, cfg *rest.Config) dynamic.Interface {
	tb.Helper()
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WarningHandler = rest.NoWarnings{}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// createPods creates a Pod with one container named app for each name, with
// the given number of concurrent requests.
func createPods(tb testing.TB, c dynamic.Interface, ns string, names []string, parallel int) {
	tb.Helper()
	work := make(chan string)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range parallel {
		wg.Go(func() {
			for name := range work {
				p := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "Pod",
					"metadata": map[string]any{"name": name},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "busybox:1.36"}}},
				}}
				if _, err := c.Resource(podsGVR).Namespace(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					failed.CompareAndSwap(nil, fmt.Errorf("create pod %s/%s: %w", ns, name, err))
				}
			}
		})
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	if err := failed.Load(); err != nil {
		tb.Fatal(err)
	}
}

// patchStatus sets the restart count of container app in a Pod's status,
// through the status subresource, as the kubelet would.
func patchStatus(tb testing.TB, c dynamic.Interface, ns, name string, restarts int64) {
	tb.Helper()
	if err := patchStatusErr(c, ns, name, restarts); err != nil {
		tb.Fatal(err)
	}
}

func patchStatusErr(c dynamic.Interface, ns, name string, restarts int64) error {
	body := fmt.Sprintf(`{"status":{"containerStatuses":[{"name":"app","image":"busybox:1.36","imageID":"","ready":true,`+
		`"restartCount":%d,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}]}}`, restarts)
	_, err := c.Resource(podsGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch status of pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// restartCount returns status.containerStatuses[0].restartCount.
func restartCount(obj map[string]any) (int64, bool) {
	l, _, _ := unstructured.NestedSlice(obj, "status", "containerStatuses")
	if len(l) == 0 {
		return 0, false
	}
	cs, _ := l[0].(map[string]any)
	switch v := cs["restartCount"].(type) {
	case int64:
		return v, true
	case float64:
		return int64(v), true
	}
	return 0, false
}

// runOperator starts a Source with opts and its bus with busOpts, after
// register has added the handlers. stop ends it and waits for Run to
// return; it also runs when the test or benchmark ends.
func runOperator(tb testing.TB, opts k8s.Options, busOpts *opbus.Options, register func(*opbus.Bus) error) (bus *opbus.Bus, stop func()) {
	tb.Helper()
	src, err := k8s.New(&opts)
	if err != nil {
		tb.Fatal(err)
	}
	if busOpts == nil {
		busOpts = &opbus.Options{}
	}
	bus, err = opbus.New(src.BusOptions(busOpts))
	if err != nil {
		tb.Fatal(err)
	}
	if err := register(bus); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, bus) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					tb.Errorf("Run: %v", err)
				}
			case <-time.After(time.Minute):
				tb.Errorf("Run did not return within a minute of its context ending")
			}
		})
	}
	tb.Cleanup(stop)
	return bus, stop
}

// benchLogger logs the operator's errors, which a benchmark should not
// have, to its output.
func benchLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
}

// waitUntil waits up to d until cond holds.
func waitUntil(tb testing.TB, what string, d time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until the bus is idle and the events of the operator's own
// last writes have come back through the informers.
func settle(tb testing.TB, bus *opbus.Bus) {
	tb.Helper()
	for range 2 {
		ctx, cancel := context.WithTimeout(tb.Context(), time.Minute)
		err := bus.Wait(ctx)
		cancel()
		if err != nil {
			tb.Fatalf("the bus did not become idle: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// percentile returns the p-th percentile of sorted, by the nearest-rank
// method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
