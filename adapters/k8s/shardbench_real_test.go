package k8s_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// BenchmarkShards measures a sharded operator on the real API server:
// replicas of one operator in a shard ring ([k8s.Shards], default Lease
// durations: 15 s, renewed every 2 s, 4 bus workers each), each a Source
// and a bus of its own with a client of its own, all in this one process
// (not separate processes: the API server sees each replica's own list
// and watch requests, but the replicas share this process's 2 cores with
// the load generator, as they share the machine with the API server).
//
// Three servings of the objects: gate=on/kind=ConfigMap, on an API
// server started with the ShardedListAndWatch gate, whose shard selector
// each replica lists and watches with; gate=on/kind=Widget, a custom
// resource on that same server; gate=off/kind=ConfigMap on the shared
// server, which ignores the selector: each replica receives every object
// and filters on its side.
//
// replicas=N (1, 2, 3): N replicas own the ring between them and have
// handled the objects' first value; then each op changes every object
// once (16 concurrent merge patches) and waits until each change is
// handled. Reported, per op: rI-received, the object states replica I's
// transport received for the resource (watch events other than bookmarks,
// plus list items), rI-handled, its handler runs, not-owned, the states
// all replicas' watches received that another replica owned; and
// handled/s, the objects handled per second of the op, all replicas
// together. A handler run writes the object's record, whose event comes
// back: a replica that receives only its own objects receives up to 2
// states per object it owns.
//
// handoff: two replicas own the ring; a third joins (a new identity each
// time) and later stops cleanly, OPBUS_SHARD_BENCH_HANDOFFS times (8 by
// default). join-p50-ms and join-p99-ms are from the new replica's Run to
// the ring being whole again with it (it is ready: it owns all the
// buckets the ring assigns it, the others having released them; the three
// own all 256); leave-p50-ms and leave-p99-ms from cancelling the
// leaver's context to the two left owning all 256 and ready. (With few
// samples, p99 is the largest.)
//
// crash: two replicas own the ring; a third joins and then crashes, as
// far as the ring sees (it renews its Lease no more and leaves it in
// place, see [k8s.CrashShards]; its bus stops without releasing its
// buckets), at a random point of its 2 s renew period,
// OPBUS_SHARD_BENCH_CRASHES times (8 by default).
// crash-p50-ms and crash-p99-ms are from the crash to the two left
// owning all 256 buckets and ready; over-p50-ms and over-p99-ms the same
// from the crashed replica's last renewal, less the Lease duration and the
// grace (15 s + 4 s): what the hand-off took beyond the wait that no
// overlap requires.
//
// OPBUS_SHARD_BENCH_OBJECTS sets the number of objects (600 by default),
// OPBUS_SHARD_BENCH_WORK a time each handler run sleeps (none by default),
// as a handler waiting on I/O would. Run with -benchtime=1x: an op is a
// whole round of changes. -benchmem would count the load generator's
// allocations with the replicas', so it says little here.
func BenchmarkShards(b *testing.B) {
	objects := benchEnvInt(b, "OPBUS_SHARD_BENCH_OBJECTS", 600)
	cycles := benchEnvInt(b, "OPBUS_SHARD_BENCH_HANDOFFS", 8)
	crashes := benchEnvInt(b, "OPBUS_SHARD_BENCH_CRASHES", 8)
	var work time.Duration
	if v := os.Getenv("OPBUS_SHARD_BENCH_WORK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			b.Fatalf("OPBUS_SHARD_BENCH_WORK=%q: want a duration such as 10ms", v)
		}
		work = d
	}
	serve := func(b *testing.B, env *kubetest.Env, widget bool) {
		sb := &shardBench{env: env, objects: objects, work: work, gvr: configMapsGVR, kind: "ConfigMap", field: "data"}
		if widget {
			var crd unstructured.Unstructured
			if err := json.Unmarshal([]byte(widgetCRD), &crd.Object); err != nil {
				b.Fatal(err)
			}
			env.InstallCRDs(b, &crd)
			sb.gvr, sb.kind, sb.field = widgetsGVR, widgetKind, "spec"
		}
		for n := 1; n <= 3; n++ {
			b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) { sb.throughput(b, n) })
		}
		b.Run("handoff", func(b *testing.B) { sb.handoff(b, cycles) })
		b.Run("crash", func(b *testing.B) { sb.crash(b, crashes) })
	}
	b.Run("gate=on", func(b *testing.B) {
		if os.Getenv(kubetest.KubeconfigVar) != "" {
			b.Skipf("starts an API server with the ShardedListAndWatch gate: only with %s, not on the cluster of %s", kubetest.BinVar, kubetest.KubeconfigVar)
		}
		env := kubetest.StartWith(b, &kubetest.StartOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
		b.Run("kind=ConfigMap", func(b *testing.B) { serve(b, env, false) })
		b.Run("kind=Widget", func(b *testing.B) { serve(b, env, true) })
	})
	b.Run("gate=off", func(b *testing.B) {
		b.Run("kind=ConfigMap", func(b *testing.B) { serve(b, kubetest.Shared(b), false) })
	})
}

// benchEnvInt returns the positive number in the environment variable
// name, or def if it is unset.
func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// shardBench is one serving of the objects: a server, a resource and the
// field whose "n" the benchmark changes.
type shardBench struct {
	env     *kubetest.Env
	objects int
	work    time.Duration
	gvr     schema.GroupVersionResource
	kind    string // as the bus names it
	field   string // data or spec
}

// benchReplica is one replica of the ring.
type benchReplica struct {
	id      string
	src     *k8s.Source
	stop    func()
	started time.Time
	recv    *transportCount
	handled atomic.Int64
}

// owned returns how many buckets the replica owns.
func (r *benchReplica) owned() int { _, n := k8s.ShardNotOwned(r.src); return n }

// notOwned returns how many states its watch received of others' objects.
func (r *benchReplica) notOwned() int64 { n, _ := k8s.ShardNotOwned(r.src); return n }

// handledLog records which value of each object was handled, how often.
type handledLog struct {
	mu   sync.Mutex
	runs map[string]map[string]int // object → n → runs
}

func (l *handledLog) add(name, n string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs[name] == nil {
		l.runs[name] = map[string]int{}
	}
	l.runs[name][n]++
}

// all reports whether every object's value n was handled.
func (l *handledLog) all(objects int, n string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range objects {
		if l.runs[fmt.Sprintf("o-%04d", i)][n] == 0 {
			return false
		}
	}
	return true
}

// twice returns the values handled more than once.
func (l *handledLog) twice() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for name, ns := range l.runs {
		for n, runs := range ns {
			if runs > 1 {
				out = append(out, fmt.Sprintf("%s n=%s %d times", name, n, runs))
			}
		}
	}
	slices.Sort(out)
	return out
}

// start runs a replica named id in the ring of namespace ns until b ends
// or its stop is called.
func (sb *shardBench) start(b *testing.B, ns, id string, log *handledLog) *benchReplica {
	b.Helper()
	r := &benchReplica{id: id, recv: &transportCount{path: "/" + sb.gvr.Resource}}
	cfg := sb.env.AdminConfig()
	cfg.WrapTransport = r.recv.wrap
	src, err := k8s.New(&k8s.Options{
		Config: cfg, Name: "shardbench", Logger: benchLogger(b),
		Resources: []k8s.Resource{{GVR: sb.gvr, Namespaces: []string{ns}}},
		Shards:    &k8s.Shards{Namespace: ns, Identity: id},
	})
	if err != nil {
		b.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		b.Fatal(err)
	}
	err = bus.Handle("bench", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		m, _ := ev.Object()[sb.field].(map[string]any)
		if sb.work > 0 {
			time.Sleep(sb.work)
		}
		log.add(ev.Key.Name, fmt.Sprint(m["n"]))
		r.handled.Add(1)
		return opbus.Active(""), nil
	}, opbus.On{Kinds: []string{sb.kind}, Fields: []string{sb.field}})
	if err != nil {
		b.Fatal(err)
	}
	r.src = src
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r.started = time.Now()
	go func() { done <- src.Run(ctx, bus) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					b.Errorf("replica %s: Run: %v", id, err)
				}
			case <-time.After(time.Minute):
				b.Errorf("replica %s: Run did not return within a minute of its context ending", id)
			}
		})
	}
	b.Cleanup(r.stop)
	return r
}

// whole reports whether the replicas are ready and own all 256 buckets
// between them.
func whole(rs []*benchReplica) bool {
	sum := 0
	for _, r := range rs {
		if r.src.Ready() != nil {
			return false
		}
		sum += r.owned()
	}
	return sum == 256
}

// create creates the objects o-0000… in ns with n=1, 16 at a time.
func (sb *shardBench) create(b *testing.B, c dynamic.Interface, ns string) {
	b.Helper()
	sb.each(b, func(name string) error {
		o := map[string]any{"metadata": map[string]any{"name": name}}
		if sb.kind == "ConfigMap" {
			o["apiVersion"], o["kind"], o["data"] = "v1", "ConfigMap", map[string]any{"n": "1"}
		} else {
			o["apiVersion"], o["kind"], o["spec"] = "test.opbus.dev/v1", "Widget", map[string]any{"n": "1"}
		}
		_, err := c.Resource(sb.gvr).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: o}, metav1.CreateOptions{})
		return err
	})
}

// change sets every object's n, 16 requests at a time.
func (sb *shardBench) change(b *testing.B, c dynamic.Interface, ns string, n int) {
	b.Helper()
	body := fmt.Appendf(nil, `{%q:{"n":"%d"}}`, sb.field, n)
	sb.each(b, func(name string) error {
		_, err := c.Resource(sb.gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
}

// each calls f for every object's name, 16 at a time.
func (sb *shardBench) each(b *testing.B, f func(name string) error) {
	b.Helper()
	names := make(chan string)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range 16 {
		wg.Go(func() {
			for name := range names {
				if err := f(name); err != nil {
					e := fmt.Errorf("%s %s: %w", sb.gvr.Resource, name, err)
					failed.CompareAndSwap(nil, &e)
				}
			}
		})
	}
	for i := range sb.objects {
		names <- fmt.Sprintf("o-%04d", i)
	}
	close(names)
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}

// throughput runs the replicas=N case.
func (sb *shardBench) throughput(b *testing.B, replicas int) {
	ns := sb.env.Namespace(b)
	c := loadClient(b, sb.env.AdminConfig())
	log := &handledLog{runs: map[string]map[string]int{}}
	var rs []*benchReplica
	for i := range replicas {
		rs = append(rs, sb.start(b, ns, fmt.Sprintf("r%d", i), log))
	}
	waitUntil(b, "the replicas own the ring", 2*time.Minute, func() bool { return whole(rs) })
	sb.create(b, c, ns)
	waitUntil(b, "every object's first value handled", 5*time.Minute, func() bool { return log.all(sb.objects, "1") })

	recv0, handled0 := make([]int64, replicas), make([]int64, replicas)
	var notOwned0 int64
	for i, r := range rs {
		recv0[i], handled0[i] = r.recv.n.Load(), r.handled.Load()
		notOwned0 += r.notOwned()
	}
	b.ResetTimer()
	var took time.Duration
	for i := range b.N {
		begin := time.Now()
		sb.change(b, c, ns, i+2)
		waitUntil(b, "every change handled", 5*time.Minute, func() bool { return log.all(sb.objects, strconv.Itoa(i+2)) })
		took += time.Since(begin)
	}
	b.StopTimer()
	if tw := log.twice(); len(tw) > 0 {
		b.Errorf("values handled more than once: %d, such as %v", len(tw), tw[:min(5, len(tw))])
	}
	var notOwned int64
	for i, r := range rs {
		b.ReportMetric(float64(r.recv.n.Load()-recv0[i])/float64(b.N), r.id+"-received/op")
		b.ReportMetric(float64(r.handled.Load()-handled0[i])/float64(b.N), r.id+"-handled/op")
		notOwned += r.notOwned()
	}
	b.ReportMetric(float64(notOwned-notOwned0)/float64(b.N), "not-owned/op")
	b.ReportMetric(float64(sb.objects*b.N)/took.Seconds(), "handled/s")
}

// handoff runs the handoff case.
func (sb *shardBench) handoff(b *testing.B, cycles int) {
	ns := sb.env.Namespace(b)
	c := loadClient(b, sb.env.AdminConfig())
	log := &handledLog{runs: map[string]map[string]int{}}
	rs := []*benchReplica{sb.start(b, ns, "r0", log), sb.start(b, ns, "r1", log)}
	waitUntil(b, "the replicas own the ring", 2*time.Minute, func() bool { return whole(rs) })
	sb.create(b, c, ns)
	waitUntil(b, "every object's first value handled", 5*time.Minute, func() bool { return log.all(sb.objects, "1") })

	var joins, leaves []time.Duration
	b.ResetTimer()
	for range b.N {
		for i := range cycles {
			j := sb.start(b, ns, fmt.Sprintf("j%d", i), log)
			all := append(slices.Clone(rs), j)
			waitUntil(b, j.id+" joined", 2*time.Minute, func() bool { return whole(all) })
			joins = append(joins, time.Since(j.started))
			begin := time.Now()
			j.stop()
			waitUntil(b, j.id+" left", 2*time.Minute, func() bool { return whole(rs) })
			leaves = append(leaves, time.Since(begin))
		}
	}
	b.StopTimer()
	if tw := log.twice(); len(tw) > 0 {
		b.Errorf("values handled more than once: %v", tw)
	}
	slices.Sort(joins)
	slices.Sort(leaves)
	b.ReportMetric(ms(percentile(joins, 50)), "join-p50-ms")
	b.ReportMetric(ms(percentile(joins, 99)), "join-p99-ms")
	b.ReportMetric(ms(percentile(leaves, 50)), "leave-p50-ms")
	b.ReportMetric(ms(percentile(leaves, 99)), "leave-p99-ms")
	b.ReportMetric(float64(len(joins)+len(leaves)), "handoffs")
}

// crash runs the crash case.
func (sb *shardBench) crash(b *testing.B, crashes int) {
	ns := sb.env.Namespace(b)
	c := loadClient(b, sb.env.AdminConfig())
	log := &handledLog{runs: map[string]map[string]int{}}
	rs := []*benchReplica{sb.start(b, ns, "r0", log), sb.start(b, ns, "r1", log)}
	waitUntil(b, "the replicas own the ring", 2*time.Minute, func() bool { return whole(rs) })
	sb.create(b, c, ns)
	waitUntil(b, "every object's first value handled", 5*time.Minute, func() bool { return log.all(sb.objects, "1") })

	bound := 15*time.Second + k8s.ShardGrace(k8s.Shards{})
	var fromCrash, over []time.Duration
	b.ResetTimer()
	for range b.N {
		for i := range crashes {
			j := sb.start(b, ns, fmt.Sprintf("c%d", i), log)
			all := append(slices.Clone(rs), j)
			waitUntil(b, j.id+" joined", 2*time.Minute, func() bool { return whole(all) })
			// A replica owns its buckets just after a renewal (its claim
			// renews): crash at a random point of its renew period.
			time.Sleep(time.Duration(rand.Int64N(int64(2 * time.Second))))
			renewed := k8s.CrashShards(j.src)
			crashed := time.Now()
			j.stop()
			waitUntil(b, j.id+"'s buckets taken on", 2*time.Minute, func() bool { return whole(rs) })
			done := time.Now()
			fromCrash = append(fromCrash, done.Sub(crashed))
			over = append(over, done.Sub(renewed)-bound)
		}
	}
	b.StopTimer()
	if tw := log.twice(); len(tw) > 0 {
		b.Errorf("values handled more than once: %v", tw)
	}
	slices.Sort(fromCrash)
	slices.Sort(over)
	if over[0] < 0 {
		b.Errorf("a crashed replica's buckets were taken on %v after its last renewal, before its Lease expired plus the grace (%v)", over[0]+bound, bound)
	}
	b.ReportMetric(ms(percentile(fromCrash, 50)), "crash-p50-ms")
	b.ReportMetric(ms(percentile(fromCrash, 99)), "crash-p99-ms")
	b.ReportMetric(ms(percentile(over, 50)), "over-p50-ms")
	b.ReportMetric(ms(percentile(over, 99)), "over-p99-ms")
	b.ReportMetric(float64(len(fromCrash)), "crashes")
}

// transportCount counts the object states that responses for a resource
// (requests whose URL path ends in path) carry: the items of a list and
// the events of a watch other than bookmarks and errors.
type transportCount struct {
	path string
	n    atomic.Int64
}

func (tc *transportCount) wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{tc: tc, rt: rt}
}

type countingTransport struct {
	tc *transportCount
	rt http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, t.tc.path) || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		pr, pw := io.Pipe()
		body := resp.Body
		go func() {
			// Each watch event is one JSON document on a line of its own.
			sc := bufio.NewScanner(io.TeeReader(body, pw))
			sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
			for sc.Scan() {
				line := sc.Bytes()
				if bytes.HasPrefix(line, []byte(`{"type":"ADDED"`)) || bytes.HasPrefix(line, []byte(`{"type":"MODIFIED"`)) || bytes.HasPrefix(line, []byte(`{"type":"DELETED"`)) {
					t.tc.n.Add(1)
				}
			}
			_, _ = io.Copy(io.Discard, io.TeeReader(body, pw))
			pw.CloseWithError(sc.Err())
		}()
		resp.Body = struct {
			io.Reader
			io.Closer
		}{pr, closers{pr, body}}
		return resp, nil
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(raw, &list) == nil {
		t.tc.n.Add(int64(len(list.Items)))
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp, nil
}

// closers closes each of its closers.
type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		_ = c.Close()
	}
	return nil
}
