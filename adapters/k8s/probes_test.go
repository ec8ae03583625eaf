package k8s

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// probeFlags are the fields of a probeState, without its mutex.
type probeFlags struct{ started, stopped, electing, leading, synced bool }

// TestReady walks a Source's probe state through a run and checks what
// Ready, Leading and /readyz say at each step. With leader election, a
// replica that does not lead is ready (controller-runtime's convention).
func TestReady(t *testing.T) {
	cases := []struct {
		name    string
		state   probeFlags
		ready   bool
		leading bool
	}{
		{"before Run", probeFlags{}, false, false},
		{"started, informers not synced", probeFlags{started: true, leading: true}, false, true},
		{"synced", probeFlags{started: true, leading: true, synced: true}, true, true},
		{"electing, standby", probeFlags{started: true, electing: true}, true, false},
		{"electing, leading, not synced", probeFlags{started: true, electing: true, leading: true}, false, true},
		{"electing, leading, synced", probeFlags{started: true, electing: true, leading: true, synced: true}, true, true},
		{"Run returned", probeFlags{started: true, stopped: true}, false, false},
		{"Run returned after a lead", probeFlags{started: true, electing: true, stopped: true}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Source{}
			s.probe.set(func(p *probeState) {
				p.started, p.stopped, p.electing, p.leading, p.synced = c.state.started, c.state.stopped, c.state.electing, c.state.leading, c.state.synced
			})
			err := s.Ready()
			if (err == nil) != c.ready {
				t.Errorf("Ready: got %v, want ready %v", err, c.ready)
			}
			if err != nil && !errors.Is(err, ErrNotReady) {
				t.Errorf("Ready: got %v, want an error matching ErrNotReady", err)
			}
			if got := s.Leading(); got != c.leading {
				t.Errorf("Leading: got %v, want %v", got, c.leading)
			}
			rec := httptest.NewRecorder()
			s.Probes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
			want := http.StatusOK
			if !c.ready {
				want = http.StatusInternalServerError
			}
			if rec.Code != want {
				t.Errorf("/readyz: got %d, want %d (%s)", rec.Code, want, rec.Body)
			}
			if notLeading := strings.Contains(rec.Body.String(), "not leading"); notLeading == c.leading {
				t.Errorf("/readyz?verbose: got %q, which says leading %v, want %v", rec.Body, !notLeading, c.leading)
			}
		})
	}
}

// TestProbesBeforeRun checks a new Source's probes: alive (/healthz 200
// "ok") but not ready (/readyz 500, saying that Run has not started), and
// an unknown path is 404.
func TestProbesBeforeRun(t *testing.T) {
	s, err := New(&Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, Resources: []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}}})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Probes()
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok"},
		{"/healthz?verbose", 200, "[+]ping ok\ncheck passed\n"},
		{"/readyz", 500, "Run has not started"},
		{"/metrics", 404, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("GET %s: got %d %q, want %d containing %q", c.path, rec.Code, rec.Body, c.code, c.body)
		}
	}
}
