package k8s_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// writes counts the requests that change something (every method but GET)
// that an operator sends, by URL path.
type writes struct {
	mu    sync.Mutex
	paths []string // "PATCH /api/v1/namespaces/ns/pods/web", in order
}

// wrap returns a copy of cfg whose requests w counts.
func (w *writes) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				w.mu.Lock()
				w.paths = append(w.paths, req.Method+" "+req.URL.Path)
				w.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// to returns the writes to the object named name of the resource (the
// plural name in URLs), its subresources included.
func (w *writes) to(resource, name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.paths {
		_, path, _ := strings.Cut(p, " ")
		if strings.HasSuffix(path, "/"+resource+"/"+name) || strings.HasSuffix(path, "/"+resource+"/"+name+"/status") {
			out = append(out, p)
		}
	}
	return out
}

// failingPeriod is how long TestFailingHandlerBacksOff watches a failing
// handler: OPBUS_TEST_FAILING_PERIOD (a Go duration), 4s by default.
func failingPeriod(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("OPBUS_TEST_FAILING_PERIOD")
	if v == "" {
		return 4 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("OPBUS_TEST_FAILING_PERIOD=%q: want a positive duration such as 30s", v)
	}
	return d
}

// maxRuns returns how many times a handler failing from time 0 can run
// within d under b: once, then once per retry due by d at the shortest
// jittered delays.
func maxRuns(b opbus.Backoff, d time.Duration) int {
	n, at := 1, time.Duration(0)
	for {
		delay := min(b.Initial<<min(n-1, 30), b.Max)
		at += time.Duration(float64(delay) * (1 - b.Jitter))
		if at > d {
			return n
		}
		n++
	}
}

// TestFailingHandlerBacksOff checks that a handler that always fails runs
// on the backoff's schedule and no faster (issue 12: it ran about 60 times
// a second, because each failure's record write came back through the
// informer as a new state), that a handler asking for RetryAfter(5h) runs
// once, that the adapter's own writes never reach the bus as new states,
// and that the operator writes the object no more often than the
// failing handler runs: the record of each failure, plus the claim and
// the first status. The period is OPBUS_TEST_FAILING_PERIOD.
func TestFailingHandlerBacksOff(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	period := failingPeriod(t)
	backoff := opbus.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Jitter: 0.01}

	for _, tc := range []struct {
		name     string
		resource k8s.Resource
		create   func(t *testing.T, ns string)
		// claims is how many writes the adapter makes before the first
		// run (the claim, the first conditions) and for the first
		// status.
		claims int
	}{
		{
			name:     "widget with conditions and finalizer",
			resource: k8s.Resource{GVR: widgetsGVR, Finalizer: true},
			create: func(t *testing.T, ns string) {
				createWidget(t, dynClient(t, env.AdminConfig()), ns, "x", `{"size":1}`)
			},
			claims: 3,
		},
		{
			name:     "pod with the status annotation",
			resource: k8s.Resource{GVR: podsGVR},
			create: func(t *testing.T, ns string) {
				createPod(t, dynClient(t, env.AdminConfig()), ns, "x")
			},
			claims: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			var w writes
			var r runs
			tc.resource.Namespaces = []string{ns}
			var first time.Time
			var mu sync.Mutex
			op := startBus(t, k8s.Options{Config: w.wrap(env.AdminConfig()), Resources: []k8s.Resource{tc.resource}},
				opbus.Options{Backoff: backoff}, func(b *opbus.Bus) {
					must(t, b.Handle("fail", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
						mu.Lock()
						if first.IsZero() {
							first = time.Now()
						}
						mu.Unlock()
						r.add(ev)
						return opbus.Status{}, errors.New("always fails")
					}, opbus.On{}))
					must(t, b.Handle("later", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
						r.add(ev)
						return opbus.Waiting("in five hours"), opbus.RetryAfter(5*time.Hour, nil)
					}, opbus.On{}))
					must(t, b.Handle("cleanup", r.handler(nil), opbus.On{Types: []opbus.EventType{opbus.Delete}}))
				})
			tc.create(t, ns)
			eventually(t, "the failing handler runs", func() bool { return r.count("fail", "x") > 0 })
			time.Sleep(period)
			mu.Lock()
			elapsed := time.Since(first)
			mu.Unlock()
			resource := tc.resource.GVR.Resource
			runs, written := r.count("fail", "x"), w.to(resource, "x")
			bound := maxRuns(backoff, elapsed)
			t.Logf("over %v: %d runs (the schedule allows %d), %d writes to the object", elapsed.Round(time.Millisecond), runs, bound, len(written))
			if runs > bound {
				t.Errorf("the failing handler ran %d times in %v; its backoff allows at most %d", runs, elapsed, bound)
			}
			if runs < min(bound, 3) {
				t.Errorf("the failing handler ran %d times in %v; its backoff retries it %d times", runs, elapsed, bound-1)
			}
			if n := op.bus.Stats().Observed; n != 1 {
				t.Errorf("the bus was given %d states of the object, want 1: the adapter's own writes came back to it", n)
			}
			if n := r.count("later", "x"); n != 1 {
				t.Errorf("the handler that asked for a retry in 5h ran %d times, want once", n)
			}
			if max := runs + tc.claims; len(written) > max {
				t.Errorf("%d writes to the object for %d runs; want at most %d (one record per run, %d for the claim and the first status):\n%s",
					len(written), runs, max, tc.claims, strings.Join(written, "\n"))
			}
		})
	}
}
