package k8s_test

import (
	"context"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/opbus/opbus/adapters/k8s"
)

// TestFlags checks the flags' names and defaults, controller-runtime's, and
// what parsing sets.
func TestFlags(t *testing.T) {
	var f k8s.Flags
	fs := flag.NewFlagSet("op", flag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.MetricsBindAddress != ":8080" || f.HealthProbeBindAddress != ":8081" || f.LeaderElect || f.ServeExplain {
		t.Errorf("defaults: got %+v, want :8080, :8081, false, false", f)
	}
	if le := f.LeaderElection(k8s.LeaderElection{Namespace: "ns", Name: "op"}); le != nil {
		t.Errorf("LeaderElection without --leader-elect: got %+v, want nil", le)
	}
	if err := fs.Parse([]string{"--metrics-bind-address=0", "--health-probe-bind-address", "127.0.0.1:9", "--leader-elect", "--serve-explain"}); err != nil {
		t.Fatal(err)
	}
	if f.MetricsBindAddress != "0" || f.HealthProbeBindAddress != "127.0.0.1:9" || !f.LeaderElect || !f.ServeExplain {
		t.Errorf("parsed: got %+v", f)
	}
	if le := f.LeaderElection(k8s.LeaderElection{Namespace: "ns", Name: "op"}); le == nil || le.Name != "op" {
		t.Errorf("LeaderElection with --leader-elect: got %+v, want the Lease ns/op", le)
	}
	if sh := f.ShardRing(k8s.Shards{Namespace: "ns"}); sh != nil {
		t.Errorf("ShardRing without --shards: got %+v, want nil", sh)
	}
	if err := fs.Parse([]string{"--shards"}); err != nil {
		t.Fatal(err)
	}
	if sh := f.ShardRing(k8s.Shards{Namespace: "ns"}); sh == nil || sh.Namespace != "ns" {
		t.Errorf("ShardRing with --shards: got %+v, want the ring in ns", sh)
	}
}

// TestShardsExcludeLeaderElection: a Source refuses Shards with leader
// election, and a Shards without a namespace, naming the field.
func TestShardsExcludeLeaderElection(t *testing.T) {
	base := k8s.Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, Resources: []k8s.Resource{{GVR: podsGVR}}}
	o := base
	o.Shards = &k8s.Shards{Namespace: "ns"}
	o.LeaderElection = &k8s.LeaderElection{Namespace: "ns", Name: "op"}
	if _, err := k8s.New(&o); err == nil || !strings.Contains(err.Error(), "Options.Shards is set with LeaderElection") {
		t.Errorf("Shards with LeaderElection: %v", err)
	}
	o = base
	o.Shards = &k8s.Shards{}
	if _, err := k8s.New(&o); err == nil || !strings.Contains(err.Error(), "Shards.Namespace is empty") {
		t.Errorf("Shards without a namespace: %v", err)
	}
	o = base
	o.Name, o.Shards = "web app", &k8s.Shards{Namespace: "ns"}
	if _, err := k8s.New(&o); err == nil || !strings.Contains(err.Error(), `shard ring name "web app"`) {
		t.Errorf("Shards of an operator whose name is no label value: %v", err)
	}
}

func newOfflineSource(t *testing.T, m *k8s.Metrics) *k8s.Source {
	t.Helper()
	s, err := k8s.New(&k8s.Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, Resources: []k8s.Resource{{GVR: podsGVR}}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestServe starts both servers on free ports, reads /metrics, /healthz
// and /readyz over HTTP, then ends the context: Wait returns nil and the
// ports no longer answer.
func TestServe(t *testing.T) {
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newOfflineSource(t, m)
	ctx, cancel := context.WithCancel(t.Context())
	sv, err := s.Serve(ctx, k8s.Flags{MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, "http://"+sv.Metrics.String()+"/metrics"); code != 200 || !strings.Contains(body, "opbus_queue_depth 0") {
		t.Errorf("/metrics: got %d %q, want 200 with opbus_queue_depth 0", code, body)
	}
	if code, body := httpGet(t, "http://"+sv.Probes.String()+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz: got %d %q, want 200 ok", code, body)
	}
	if code, _ := httpGet(t, "http://"+sv.Probes.String()+"/readyz"); code != 500 {
		t.Errorf("/readyz before Run: got %d, want 500", code)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- sv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return within 10s of the context ending")
	}
	if _, err := http.Get("http://" + sv.Probes.String() + "/healthz"); err == nil {
		t.Errorf("the probe server still answers after shutdown")
	}
}

// TestServeRefuses checks Serve's errors: a metrics address without
// Metrics, ServeExplain without a metrics address, an address it cannot
// listen on; "0" serves nothing.
func TestServeRefuses(t *testing.T) {
	s := newOfflineSource(t, nil)
	if _, err := s.Serve(t.Context(), k8s.Flags{MetricsBindAddress: ":8080", HealthProbeBindAddress: "0"}); err == nil || !strings.Contains(err.Error(), `metrics address ":8080" is set but Options.Metrics is nil`) {
		t.Errorf("metrics without Metrics: got %v", err)
	}
	if _, err := s.Serve(t.Context(), k8s.Flags{MetricsBindAddress: "0", HealthProbeBindAddress: "0", ServeExplain: true}); err == nil || !strings.Contains(err.Error(), `ServeExplain is set but the metrics address is "0"`) {
		t.Errorf("ServeExplain without a metrics server: got %v", err)
	}
	if _, err := s.Serve(t.Context(), k8s.Flags{MetricsBindAddress: "0", HealthProbeBindAddress: "127.0.0.1:bad"}); err == nil || !strings.Contains(err.Error(), `listening on "127.0.0.1:bad"`) {
		t.Errorf("bad address: got %v, want an error naming it", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	sv, err := s.Serve(ctx, k8s.Flags{MetricsBindAddress: "0", HealthProbeBindAddress: ""})
	if err != nil {
		t.Fatal(err)
	}
	if sv.Metrics != nil || sv.Probes != nil {
		t.Errorf("no addresses: got %v and %v listening, want none", sv.Metrics, sv.Probes)
	}
	cancel()
	if err := sv.Wait(); err != nil {
		t.Error(err)
	}
}
