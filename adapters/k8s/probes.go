package k8s

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// ErrNotReady is matched (errors.Is) by what [Source.Ready] returns while
// the Source is not ready.
var ErrNotReady = errors.New("k8s: not ready")

// probeState is what a Source's probes report.
type probeState struct {
	mu       sync.Mutex
	started  bool         // Run began
	stopped  bool         // Run returned
	electing bool         // Run campaigns for a Lease
	leading  bool         // this replica watches and handles
	synced   bool         // the informers of the current lead have synced
	lost     bool         // the Lease was lost: the bus halted, Run is returning
	sharded  func() error // with Options.Shards: why the replica does not own its buckets yet
}

func (p *probeState) set(f func(p *probeState)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// Ready returns nil when the Source is ready to serve, and otherwise an
// error matching [ErrNotReady] that says why. A Source is ready once Run
// has started and, while it watches, once its informers have synced their
// caches; it is not ready after Run returned. With leader election, a
// replica that does not hold the Lease is ready: it is a healthy standby,
// as in controller-runtime, where readiness does not depend on leadership
// (a Deployment's rollout waits for every replica to be ready, and only
// one leads). [Source.Leading] tells whether it handles. A leader whose
// Lease passed its renew deadline is not ready: it has stopped and Run
// returns [ErrLeadershipLost].
func (s *Source) Ready() error {
	lost := s.lostLease() // before the lock: finding it lost sets p.lost
	p := &s.probe
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.lost && lost != nil:
		return fmt.Errorf("%w: %w", ErrNotReady, lost)
	case p.lost:
		return fmt.Errorf("%w: the Lease was lost: stopped handling", ErrNotReady)
	case !p.started:
		return fmt.Errorf("%w: Run has not started", ErrNotReady)
	case p.stopped:
		return fmt.Errorf("%w: Run has returned", ErrNotReady)
	case p.electing && !p.leading:
		return nil // standby
	case !p.synced:
		return fmt.Errorf("%w: informers have not synced", ErrNotReady)
	case p.sharded != nil:
		return p.sharded()
	}
	return nil
}

// Leading reports whether the Source watches and handles now: it holds
// its Lease, or it runs without leader election, and its informers have
// started. It reports false from the Lease's renew deadline on, checked
// on this process's clock at each call (see [Options].Fence).
func (s *Source) Leading() bool {
	holds := s.holds()
	s.probe.mu.Lock()
	defer s.probe.mu.Unlock()
	return holds && s.probe.leading && !s.probe.stopped && !s.probe.lost
}

// Probes returns an [http.Handler] that serves /healthz and /readyz as
// controller-runtime's health probe server does: 200 and "ok" when the
// check passes, 500 and the reason when it fails. /healthz passes while
// the process serves; /readyz passes when [Source.Ready] returns nil. A
// GET of /readyz?verbose lists the checks (readiness and leadership).
func (s *Source) Probes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		probeReply(w, r, nil, "[+]ping ok\n")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		err := s.Ready()
		lead := "[+]leader ok\n"
		if !s.Leading() {
			lead = "[+]leader ok (not leading)\n"
		}
		if err != nil {
			probeReply(w, r, err, fmt.Sprintf("[-]informers failed: %v\n", err)+lead)
			return
		}
		probeReply(w, r, nil, "[+]informers ok\n"+lead)
	})
	return mux
}

func probeReply(w http.ResponseWriter, r *http.Request, err error, verbose string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, verbose, "check failed\n")
		return
	}
	if _, ok := r.URL.Query()["verbose"]; ok {
		fmt.Fprint(w, verbose, "check passed\n")
		return
	}
	fmt.Fprint(w, "ok")
}
