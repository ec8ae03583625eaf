package k8s

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Flags are the command-line flags of a standalone operator, with the names
// and defaults of controller-runtime's, so that manifests written for
// either work for both. Bind them with [Flags.Bind].
type Flags struct {
	// MetricsBindAddress is where /metrics is served
	// (--metrics-bind-address, default ":8080"); "0" serves none.
	MetricsBindAddress string
	// HealthProbeBindAddress is where /healthz and /readyz are served
	// (--health-probe-bind-address, default ":8081"); "0" serves none.
	HealthProbeBindAddress string
	// LeaderElect turns on leader election (--leader-elect, default
	// false); see [Flags.LeaderElection].
	LeaderElect bool
	// Shards makes the replica a member of the operator's shard ring, so
	// that replicas split the objects between them (--shards, default
	// false); see [Flags.ShardRing]. It excludes LeaderElect.
	Shards bool
	// ServeExplain serves GET /explain?kind=K&namespace=NS&name=N on the
	// metrics server: why each handler did or did not run for that
	// object ([opbus.Bus.Explain]), as JSON (--serve-explain, default
	// false). It writes nothing and shows digests, statuses and times,
	// never object values: expose it only where metrics are.
	ServeExplain bool
}

// Default bind addresses of [Flags], as controller-runtime's.
const (
	DefaultMetricsBindAddress     = ":8080"
	DefaultHealthProbeBindAddress = ":8081"
)

// Bind defines the flags on fs (flag.CommandLine if nil), with f's fields
// as their destinations.
func (f *Flags) Bind(fs *flag.FlagSet) {
	if fs == nil {
		fs = flag.CommandLine
	}
	fs.StringVar(&f.MetricsBindAddress, "metrics-bind-address", DefaultMetricsBindAddress, `The address the metrics endpoint binds to; "0" disables it.`)
	fs.StringVar(&f.HealthProbeBindAddress, "health-probe-bind-address", DefaultHealthProbeBindAddress, `The address the probe endpoints (/healthz, /readyz) bind to; "0" disables them.`)
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, "Enable leader election, so that only one replica handles at a time.")
	fs.BoolVar(&f.Shards, "shards", false, "Join the operator's shard ring: replicas split the objects between them by the hash of their uid, each handling its part (excludes --leader-elect).")
	fs.BoolVar(&f.ServeExplain, "serve-explain", false, "Serve /explain?kind=&namespace=&name= on the metrics server: why each handler did or did not run for an object, as JSON.")
}

// ShardRing returns &sh if f.Shards is set, else nil: the value for
// [Options].Shards.
func (f *Flags) ShardRing(sh Shards) *Shards {
	if !f.Shards {
		return nil
	}
	return &sh
}

// LeaderElection returns &le if f.LeaderElect is set, else nil: the value
// for [Options].LeaderElection.
func (f *Flags) LeaderElection(le LeaderElection) *LeaderElection {
	if !f.LeaderElect {
		return nil
	}
	return &le
}

// Servers are the HTTP servers [Source.Serve] started.
type Servers struct {
	// Metrics and Probes are the addresses listened on; nil for a server
	// not started.
	Metrics, Probes net.Addr

	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// Wait waits until the servers have shut down and returns their errors
// other than the shutdown itself.
func (sv *Servers) Wait() error {
	sv.wg.Wait()
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return errors.Join(sv.errs...)
}

// shutdownTimeout bounds a graceful shutdown of the servers.
const shutdownTimeout = 5 * time.Second

// Serve listens on the addresses of f and serves the Source's metrics
// (/metrics, from [Options].Metrics; with [Flags].ServeExplain, /explain
// beside it) and probes ([Source.Probes]) until ctx
// ends, then shuts the servers down, letting requests under way finish
// (for at most 5s). An address of "0" or "" serves nothing there. Serve
// returns once it listens, or an error naming an address it could not
// listen on; a metrics address needs [Options].Metrics. Start it before
// [Source.Run], so that the probes answer while Run starts.
func (s *Source) Serve(ctx context.Context, f Flags) (*Servers, error) {
	sv := &Servers{}
	type server struct {
		addr    string
		handler http.Handler
		set     *net.Addr
	}
	var servers []server
	if on(f.MetricsBindAddress) {
		if s.opts.Metrics == nil {
			return nil, fmt.Errorf("k8s: Serve: metrics address %q is set but Options.Metrics is nil: set it (see NewMetrics), or pass \"0\"", f.MetricsBindAddress)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", s.opts.Metrics.Handler())
		if f.ServeExplain {
			mux.Handle("/explain", s.ExplainHandler())
		}
		servers = append(servers, server{f.MetricsBindAddress, mux, &sv.Metrics})
	}
	if f.ServeExplain && !on(f.MetricsBindAddress) {
		return nil, fmt.Errorf("k8s: Serve: ServeExplain is set but the metrics address is %q: /explain is served on the metrics server; give it an address", f.MetricsBindAddress)
	}
	if on(f.HealthProbeBindAddress) {
		servers = append(servers, server{f.HealthProbeBindAddress, s.Probes(), &sv.Probes})
	}
	var ls []net.Listener
	for _, srv := range servers {
		l, err := new(net.ListenConfig).Listen(ctx, "tcp", srv.addr)
		if err != nil {
			for _, l := range ls {
				_ = l.Close()
			}
			return nil, fmt.Errorf("k8s: Serve: listening on %q: %w", srv.addr, err)
		}
		ls = append(ls, l)
		*srv.set = l.Addr()
	}
	for i, srv := range servers {
		hs := &http.Server{Handler: srv.handler, ReadHeaderTimeout: 10 * time.Second}
		l := ls[i]
		sv.wg.Go(func() {
			err := hs.Serve(l)
			if !errors.Is(err, http.ErrServerClosed) {
				sv.fail(fmt.Errorf("k8s: serving %s: %w", l.Addr(), err))
			}
		})
		sv.wg.Go(func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil {
				sv.fail(fmt.Errorf("k8s: shutting down %s: %w", l.Addr(), err))
			}
		})
	}
	return sv, nil
}

func (sv *Servers) fail(err error) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.errs = append(sv.errs, err)
}

// on reports whether addr asks for a server.
func on(addr string) bool { return addr != "" && addr != "0" }
