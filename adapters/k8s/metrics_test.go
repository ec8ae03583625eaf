package k8s_test

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// scrape reads the samples and TYPE lines of a Prometheus text exposition:
// samples by their line's name and labels, as printed, types by name.
func scrape(t *testing.T, body io.Reader) (samples map[string]float64, types map[string]string) {
	t.Helper()
	samples, types = map[string]float64{}, map[string]string{}
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			types[name] = typ
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples, types
}

func getPath(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestMetricsObserver feeds a Metrics the bus's measurements and checks
// what it serves: runs, failures and retries per handler and kind, the
// duration histogram, retries scheduled, states observed and coalesced,
// and the queue depth last reported.
func TestMetricsObserver(t *testing.T) {
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	w := opbus.Key{Kind: "Widget.test.opbus.dev", Namespace: "ns", Name: "a"}
	p := opbus.Key{Kind: "Pod", Namespace: "ns", Name: "b"}
	m.Observed(w, 3)
	m.Observed(p, 4)
	m.Coalesced(w)
	m.Handled(w, "size", 1, 20*time.Millisecond, nil)
	m.Handled(w, "flaky", 1, 2*time.Second, errors.New("boom"))
	m.Retrying(w, time.Second)
	m.Handled(w, "flaky", 2, 30*time.Millisecond, nil)
	m.Handled(p, "flaky", 1, time.Millisecond, &opbus.PanicError{Value: "oops"})

	code, body := getPath(t, m.Handler(), "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: got %d, want 200", code)
	}
	got, _ := scrape(t, strings.NewReader(body))
	for _, c := range []struct {
		sample string
		want   float64
	}{
		{`opbus_handler_runs_total{handler="size",kind="Widget.test.opbus.dev"}`, 1},
		{`opbus_handler_runs_total{handler="flaky",kind="Widget.test.opbus.dev"}`, 2},
		{`opbus_handler_runs_total{handler="flaky",kind="Pod"}`, 1},
		{`opbus_handler_failures_total{handler="flaky",kind="Widget.test.opbus.dev"}`, 1},
		{`opbus_handler_failures_total{handler="flaky",kind="Pod"}`, 1}, // a panic is a failure
		{`opbus_handler_retries_total{handler="flaky",kind="Widget.test.opbus.dev"}`, 1},
		{`opbus_handler_duration_seconds_count{handler="flaky",kind="Widget.test.opbus.dev"}`, 2},
		{`opbus_handler_duration_seconds_bucket{handler="flaky",kind="Widget.test.opbus.dev",le="0.05"}`, 1},
		{`opbus_handler_duration_seconds_bucket{handler="flaky",kind="Widget.test.opbus.dev",le="2.5"}`, 2},
		{`opbus_retries_scheduled_total{kind="Widget.test.opbus.dev"}`, 1},
		{`opbus_states_observed_total{kind="Widget.test.opbus.dev"}`, 1},
		{`opbus_states_observed_total{kind="Pod"}`, 1},
		{`opbus_states_coalesced_total{kind="Widget.test.opbus.dev"}`, 1},
		{`opbus_queue_depth`, 4},
		{`opbus_leader`, 0},
	} {
		if v, ok := got[c.sample]; !ok || v != c.want {
			t.Errorf("%s: got %v (present: %v), want %v", c.sample, v, ok, c.want)
		}
	}
	if _, ok := got[`opbus_handler_failures_total{handler="size",kind="Widget.test.opbus.dev"}`]; ok {
		t.Errorf("a failure series for handler size, which never failed: %s", body)
	}
}

// TestMetricsNames holds every metric to Prometheus' naming conventions:
// the opbus_ prefix, counters ending in _total, histograms in _seconds,
// and help text on each.
func TestMetricsNames(t *testing.T) {
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	k := opbus.Key{Kind: "K", Name: "n"}
	m.Observed(k, 1)
	m.Coalesced(k)
	m.Handled(k, "h", 2, time.Millisecond, errors.New("x"))
	m.Retrying(k, time.Second)
	_, body := getPath(t, m.Handler(), "/metrics")
	_, types := scrape(t, strings.NewReader(body))
	if len(types) < 9 {
		t.Fatalf("got %d metric families, want at least 9:\n%s", len(types), body)
	}
	for name, typ := range types {
		if !strings.HasPrefix(name, "opbus_") {
			t.Errorf("%s: want the opbus_ prefix", name)
		}
		switch typ {
		case "counter":
			if !strings.HasSuffix(name, "_total") {
				t.Errorf("counter %s: want the _total suffix", name)
			}
		case "histogram":
			if !strings.HasSuffix(name, "_seconds") {
				t.Errorf("histogram %s: want the _seconds suffix", name)
			}
		case "gauge":
			if strings.HasSuffix(name, "_total") {
				t.Errorf("gauge %s: _total is for counters", name)
			}
		default:
			t.Errorf("%s: unexpected type %s", name, typ)
		}
		if !strings.Contains(body, "# HELP "+name+" ") {
			t.Errorf("%s: no help text", name)
		}
	}
}

// TestNewMetricsRefuses checks that NewMetrics names what it refuses: a
// registry that already holds the metrics, buckets out of order.
func TestNewMetricsRefuses(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := k8s.NewMetrics(&k8s.MetricsOptions{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := k8s.NewMetrics(&k8s.MetricsOptions{Registerer: reg}); err == nil || !strings.Contains(err.Error(), "registering metrics") {
		t.Errorf("second Metrics on one registry: got %v, want an error registering metrics", err)
	}
	if _, err := k8s.NewMetrics(&k8s.MetricsOptions{Buckets: []float64{1, 0.5}}); err == nil || !strings.Contains(err.Error(), "Buckets [1 0.5]") {
		t.Errorf("buckets out of order: got %v, want an error naming them", err)
	}
}

// TestMetricsOnGivenRegistry checks that the metrics land on a registry the
// caller gives, and that Handler serves that registry.
func TestMetricsOnGivenRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := k8s.NewMetrics(&k8s.MetricsOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	m.Handled(opbus.Key{Kind: "K", Name: "n"}, "h", 1, time.Millisecond, nil)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range fams {
		if f.GetName() == "opbus_handler_runs_total" {
			found = true
		}
	}
	if !found {
		t.Errorf("opbus_handler_runs_total not on the given registry")
	}
	if _, body := getPath(t, m.Handler(), "/metrics"); !strings.Contains(body, `opbus_handler_runs_total{handler="h",kind="K"} 1`) {
		t.Errorf("Handler does not serve the given registry:\n%s", body)
	}
}

// TestMetricsTimers checks the timer metrics: due runs counted per handler
// and kind, and their lateness in the histogram.
func TestMetricsTimers(t *testing.T) {
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	k := opbus.Key{Kind: "Widget.test.opbus.dev", Namespace: "ns", Name: "a"}
	m.TimerDue(k, "poll", 0)
	m.TimerDue(k, "poll", 3*time.Second)
	_, body := getPath(t, m.Handler(), "/metrics")
	got, _ := scrape(t, strings.NewReader(body))
	for _, c := range []struct {
		sample string
		want   float64
	}{
		{`opbus_timer_runs_total{handler="poll",kind="Widget.test.opbus.dev"}`, 2},
		{`opbus_timer_lateness_seconds_count{handler="poll",kind="Widget.test.opbus.dev"}`, 2},
		{`opbus_timer_lateness_seconds_sum{handler="poll",kind="Widget.test.opbus.dev"}`, 3},
		{`opbus_timer_lateness_seconds_bucket{handler="poll",kind="Widget.test.opbus.dev",le="0.005"}`, 1},
		{`opbus_timer_lateness_seconds_bucket{handler="poll",kind="Widget.test.opbus.dev",le="2.5"}`, 1},
		{`opbus_timer_lateness_seconds_bucket{handler="poll",kind="Widget.test.opbus.dev",le="5"}`, 2},
	} {
		if v, ok := got[c.sample]; !ok || v != c.want {
			t.Errorf("%s: got %v (present: %v), want %v", c.sample, v, ok, c.want)
		}
	}
}
