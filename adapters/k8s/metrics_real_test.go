package k8s_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestMetricsAndProbesReal runs an operator with Metrics and its servers
// against a real API server. /readyz fails before Run and passes once the
// informers synced; /metrics then shows a handler that ran once, one that
// failed and ran again (a failure and a retry), the record and status
// writes, the due runs of a handler every 200 ms with their lateness,
// and opbus_leader 1. After Run returns, /readyz fails again and
// opbus_leader is 0.
func TestMetricsAndProbesReal(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Logger: testLogger(t), Metrics: m,
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(&opbus.Options{ShutdownTimeout: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	on := opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}
	must(t, bus.Handle("size", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		return opbus.Active(""), nil
	}, on))
	var mu sync.Mutex
	failed := false
	must(t, bus.Handle("flaky", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		mu.Lock()
		defer mu.Unlock()
		if !failed {
			failed = true
			return opbus.Status{}, opbus.RetryAfter(100*time.Millisecond, errors.New("not yet"))
		}
		return opbus.Active(""), nil
	}, on))

	must(t, bus.Handle("tick", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		return opbus.Active(""), nil
	}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}, Every: 200 * time.Millisecond}))

	sctx, stopServe := context.WithCancel(context.Background())
	defer stopServe()
	sv, err := src.Serve(sctx, k8s.Flags{MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	probes, metrics := "http://"+sv.Probes.String(), "http://"+sv.Metrics.String()+"/metrics"
	if code, body := httpGet(t, probes+"/readyz"); code != 500 || !strings.Contains(body, "Run has not started") {
		t.Errorf("/readyz before Run: got %d %q, want 500, Run has not started", code, body)
	}
	if code, _ := httpGet(t, probes+"/healthz"); code != 200 {
		t.Errorf("/healthz before Run: got %d, want 200", code)
	}

	createWidget(t, c, ns, "w", `{"size":1}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, bus) }()
	stopRun := sync.OnceValue(func() error { cancel(); return <-done })
	defer stopRun()
	eventually(t, "/readyz passes after the informers synced", func() bool {
		code, _ := httpGet(t, probes+"/readyz")
		return code == 200
	})
	if !src.Leading() {
		t.Errorf("Leading without leader election: got false, want true")
	}

	const kind = `kind="Widget.test.opbus.dev"`
	want := map[string]float64{
		`opbus_handler_runs_total{handler="size",` + kind + `}`:      1,
		`opbus_handler_runs_total{handler="flaky",` + kind + `}`:     2,
		`opbus_handler_failures_total{handler="flaky",` + kind + `}`: 1,
		`opbus_handler_retries_total{handler="flaky",` + kind + `}`:  1,
		`opbus_retries_scheduled_total{` + kind + `}`:                1,
		`opbus_leader`: 1,
	}
	var got map[string]float64
	eventually(t, "the runs are in /metrics", func() bool {
		code, body := httpGet(t, metrics)
		if code != 200 {
			return false
		}
		got, _ = scrape(t, strings.NewReader(body))
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return got[`opbus_timer_runs_total{handler="tick",`+kind+`}`] >= 2 &&
			got[`opbus_timer_lateness_seconds_count{handler="tick",`+kind+`}`] >= 2 &&
			got[`opbus_store_write_duration_seconds_count{`+kind+`}`] > 0 &&
			got[`opbus_status_write_duration_seconds_count{`+kind+`}`] > 0
	})
	if _, ok := got[`opbus_handler_failures_total{handler="size",`+kind+`}`]; ok {
		t.Errorf("a failure series for handler size, which never failed")
	}
	if v := got[`opbus_write_failures_total{`+kind+`,write="store"}`]; v != 0 {
		t.Errorf("store write failures: got %v, want 0", v)
	}
	if n, sum := got[`opbus_timer_lateness_seconds_count{handler="tick",`+kind+`}`], got[`opbus_timer_lateness_seconds_sum{handler="tick",`+kind+`}`]; sum/n > 0.1 {
		t.Errorf("timer lateness: %v due runs %.4fs late on average, want under 100ms", n, sum/n)
	}
	t.Logf("timer runs: %v, %.4fs late in all; record writes: %v in %.4fs; status writes: %v in %.4fs",
		got[`opbus_timer_runs_total{handler="tick",`+kind+`}`], got[`opbus_timer_lateness_seconds_sum{handler="tick",`+kind+`}`],
		got[`opbus_store_write_duration_seconds_count{`+kind+`}`], got[`opbus_store_write_duration_seconds_sum{`+kind+`}`],
		got[`opbus_status_write_duration_seconds_count{`+kind+`}`], got[`opbus_status_write_duration_seconds_sum{`+kind+`}`])

	if err := stopRun(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if code, body := httpGet(t, probes+"/readyz"); code != 500 || !strings.Contains(body, "Run has returned") {
		t.Errorf("/readyz after Run: got %d %q, want 500, Run has returned", code, body)
	}
	_, body := httpGet(t, metrics)
	if got, _ := scrape(t, strings.NewReader(body)); got["opbus_leader"] != 0 {
		t.Errorf("opbus_leader after Run: got %v, want 0", got["opbus_leader"])
	}
	stopServe()
	if err := sv.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

// TestProbesStandbyReal runs two replicas on one Lease. Both are ready —
// the one that does not hold the Lease as a standby, as controller-runtime
// has it — but only the holder leads: Leading, /readyz?verbose and
// opbus_leader tell them apart.
func TestProbesStandbyReal(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)

	type replica struct {
		src *k8s.Source
		m   *k8s.Metrics
	}
	run := func(who string) replica {
		m, err := k8s.NewMetrics(nil)
		if err != nil {
			t.Fatal(err)
		}
		le := &k8s.LeaderElection{Namespace: ns, Name: "probes", Identity: who,
			LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 250 * time.Millisecond}
		src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Logger: testLogger(t), Metrics: m,
			Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}, LeaderElection: le})
		if err != nil {
			t.Fatal(err)
		}
		bus, err := opbus.New(src.BusOptions(&opbus.Options{ShutdownTimeout: 10 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		must(t, bus.Handle("size", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			return opbus.Active(""), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx, bus) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run of %s: %v", who, err)
			}
		})
		return replica{src, m}
	}
	first := run("first")
	eventually(t, "first leads and is ready", func() bool { return first.src.Leading() && first.src.Ready() == nil })
	second := run("second")
	eventually(t, "second is ready", func() bool { return second.src.Ready() == nil })
	steady(t, "second leads", time.Second, second.src.Leading)
	if !first.src.Leading() {
		t.Fatal("first stopped leading")
	}
	for _, c := range []struct {
		name    string
		r       replica
		leading bool
	}{{"first", first, true}, {"second", second, false}} {
		code, body := getPath(t, c.r.src.Probes(), "/readyz?verbose")
		if code != 200 || strings.Contains(body, "not leading") == c.leading {
			t.Errorf("%s: /readyz?verbose: got %d %q, want 200, leading %v", c.name, code, body, c.leading)
		}
		_, body = getPath(t, c.r.m.Handler(), "/metrics")
		got, _ := scrape(t, strings.NewReader(body))
		if want := map[bool]float64{true: 1, false: 0}[c.leading]; got["opbus_leader"] != want {
			t.Errorf("%s: opbus_leader: got %v, want %v", c.name, got["opbus_leader"], want)
		}
	}
}
