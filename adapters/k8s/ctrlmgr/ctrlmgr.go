package ctrlmgr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// CheckName is the name of the checks [Add] registers with the manager's
// /healthz and /readyz: /readyz?verbose lists it as "[+]opbus ok".
const CheckName = "opbus"

// New returns a [k8s.Source] that runs inside mgr: its informers are those
// of the manager's cache (which the manager starts, and which
// controllers of the same manager share), its requests go through the
// manager's configuration and HTTP client, it logs through the manager's
// logger unless opts.Logger is set, its Clients find the kinds of typed
// objects in the manager's scheme unless opts.Scheme is set (so a
// kubebuilder project's *CronJob is applied without its TypeMeta), and
// unless opts.Metrics is set its
// metrics are registered on controller-runtime's metrics.Registry, which
// the manager serves on its /metrics (one Metrics for every Source of the
// process). Build the bus with
// [k8s.Source.BusOptions], register its handlers, then call [Add].
//
// opts is as for [k8s.New], with these fields left unset, since the
// manager provides them: Config, HTTPClient, Informers, and
// LeaderElection (the manager's --leader-elect election applies). Shards
// must be unset too: the cache's informers cannot list with a shard
// selector, so a sharded replica's Source is built with [k8s.New] on
// informers of its own and run by the manager with [Add]. A
// [k8s.Resource] may set no Namespaces or selectors: the manager's
// cache.Options (DefaultNamespaces, ByObject) say what its informers
// watch. A cache of all namespaces gives one informer per resource, whose
// objects the Source reads from its indexer without copying, as the
// standalone Source reads its own; a cache of some namespaces runs an
// informer per namespace, and the Source reads objects through the cache,
// which copies each one read.
//
// A manager made by [NewManager] fences the Source by its Lease: past the
// renew deadline of its last successful renew, the Source runs no
// handler, writes nothing, and stops with [k8s.ErrLeadershipLost]. A
// manager made otherwise leaves it unfenced (rule K27).
func New(mgr manager.Manager, opts *k8s.Options) (*k8s.Source, error) {
	if mgr == nil {
		return nil, errors.New("ctrlmgr: the manager is nil")
	}
	if opts == nil {
		return nil, errors.New("ctrlmgr: Options is nil: a Source needs Options.Resources to watch")
	}
	o := *opts
	switch {
	case o.Config != nil:
		return nil, errors.New("ctrlmgr: Options.Config is set: inside a manager the Source uses the manager's (mgr.GetConfig()); leave it nil")
	case o.HTTPClient != nil:
		return nil, errors.New("ctrlmgr: Options.HTTPClient is set: inside a manager the Source uses the manager's (mgr.GetHTTPClient()); leave it nil")
	case o.Informers != nil:
		return nil, errors.New("ctrlmgr: Options.Informers is set: inside a manager the Source takes its informers from the manager's cache; leave it nil")
	case o.LeaderElection != nil:
		return nil, errors.New("ctrlmgr: Options.LeaderElection is set: inside a manager the Source runs only on the replica the manager's own election chose " +
			"(manager.Options.LeaderElection, the --leader-elect flag); leave it nil")
	}
	if o.Shards != nil {
		return nil, errors.New("ctrlmgr: Options.Shards is set: the manager's cache cannot list and watch with a shard selector, nor give the objects of a bucket taken on; " +
			"build a sharded Source with k8s.New (Config: mgr.GetConfig(), its own informers) and run it with ctrlmgr.Add, the manager's leader election off")
	}
	if o.Fence != nil {
		return nil, errors.New("ctrlmgr: Options.Fence is set: inside a manager made by ctrlmgr.NewManager the Source is fenced by the manager's Lease; leave it nil")
	}
	if m, ok := mgr.(*Manager); ok && m.lock != nil {
		o.Fence = m.lock.Deadline
	}
	o.Config, o.HTTPClient = mgr.GetConfig(), mgr.GetHTTPClient()
	if o.Fence != nil {
		// A client of the Source's own, whose connections write nothing
		// once the fence is lost; the manager's stay the manager's.
		o.HTTPClient = nil
	}
	o.Informers = cacheInformers{mgr.GetCache()}
	if o.Scheme == nil {
		o.Scheme = mgr.GetScheme() // the kinds of typed objects a Client applies or deletes
	}
	if o.Logger == nil {
		o.Logger = slog.New(logr.ToSlogHandler(mgr.GetLogger().WithName("opbus")))
	}
	// The options are checked before the metrics are registered on the
	// process-wide registry, which would keep them after an error.
	if _, err := k8s.New(&o); err != nil {
		return nil, fmt.Errorf("ctrlmgr: %w", err)
	}
	if o.Metrics == nil {
		m, err := registryMetrics()
		if err != nil {
			return nil, err
		}
		o.Metrics = m
	}
	src, err := k8s.New(&o)
	if err != nil {
		return nil, fmt.Errorf("ctrlmgr: %w", err)
	}
	return src, nil
}

// shared is the one [k8s.Metrics] on controller-runtime's
// metrics.Registry, which every Source that New makes without
// Options.Metrics shares: a second Source, or a second manager in the
// same process (a restart, go test -count=2), finds the registry holding
// opbus's metrics already. Its opbus_leader is 1 while any of them leads,
// its opbus_queue_depth their sum; the other metrics are labelled by
// handler and kind.
var shared struct {
	sync.Mutex
	m *k8s.Metrics
}

// registryMetrics returns the shared Metrics, registering it on first use.
func registryMetrics() (*k8s.Metrics, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.m != nil {
		return shared.m, nil
	}
	m, err := k8s.NewMetrics(&k8s.MetricsOptions{Registerer: metrics.Registry})
	if err != nil {
		if _, dup := errors.AsType[prometheus.AlreadyRegisteredError](err); dup {
			return nil, fmt.Errorf("ctrlmgr: controller-runtime's metrics.Registry already holds opbus metrics registered by other code than ctrlmgr.New: "+
				"give the Source that Metrics as Options.Metrics: %w", err)
		}
		return nil, fmt.Errorf("ctrlmgr: %w", err)
	}
	shared.m = m
	return m, nil
}

// Add adds to mgr a runnable that runs src and bus ([k8s.Source.Run]) on
// the elected replica only, once the manager has started its cache, and
// registers [CheckName] with the manager's health probes: /readyz passes
// on a replica that is not elected (a healthy standby, as the manager's
// own readiness) and, on the elected one, once src's handlers have been
// given every object of its informers ([k8s.Source.Ready]); /healthz
// fails once Run has returned an error. src may also be a Source of
// [k8s.New] with informers of its own, such as a sharded one
// ([k8s.Options].Shards), in a manager without leader election. Call it after the bus's handlers
// are registered and before mgr.Start. A manager takes one Source: the
// checks of a second would replace the first's, of the same name.
//
// When mgr.Start's context ends, the manager cancels the runnable's
// context and waits up to its GracefulShutdownTimeout (30s by default)
// while the bus drains. When the manager loses its Lease it cancels the
// runnable's context too and returns "leader election lost" at once,
// without waiting: the program exits (kubebuilder's main does), cutting
// off handlers still running, as it cuts off its reconcilers.
func Add(mgr manager.Manager, src *k8s.Source, bus *opbus.Bus) error {
	switch {
	case mgr == nil:
		return errors.New("ctrlmgr: the manager is nil")
	case src == nil:
		return errors.New("ctrlmgr: the Source is nil: create it with ctrlmgr.New")
	case bus == nil:
		return errors.New("ctrlmgr: the bus is nil: create it with opbus.New(src.BusOptions(nil))")
	}
	r := &runnable{src: src, bus: bus}
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("ctrlmgr: adding the runnable: %w", err)
	}
	elected := mgr.Elected()
	if err := mgr.AddReadyzCheck(CheckName, func(*http.Request) error {
		select {
		case <-elected:
			return src.Ready()
		default:
			return nil // a standby: the manager's election decides who handles
		}
	}); err != nil {
		return fmt.Errorf("ctrlmgr: adding the readyz check %q: %w", CheckName, err)
	}
	if err := mgr.AddHealthzCheck(CheckName, func(*http.Request) error { return r.failed() }); err != nil {
		return fmt.Errorf("ctrlmgr: adding the healthz check %q: %w", CheckName, err)
	}
	return nil
}

// runnable runs a Source and its bus as a manager's runnable.
type runnable struct {
	src *k8s.Source
	bus *opbus.Bus

	mu  sync.Mutex
	err error // what Run returned
}

var (
	_ manager.Runnable               = (*runnable)(nil)
	_ manager.LeaderElectionRunnable = (*runnable)(nil)
)

// Start runs the Source until ctx ends.
func (r *runnable) Start(ctx context.Context) error {
	err := r.src.Run(ctx, r.bus)
	if err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}
	return err
}

// NeedLeaderElection reports true: only the elected replica handles.
func (r *runnable) NeedLeaderElection() bool { return true }

// failed returns the error Run returned, if any.
func (r *runnable) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return fmt.Errorf("ctrlmgr: the opbus Source stopped: %w", r.err)
	}
	return nil
}

// cacheInformers gives a Source the informers of a manager's cache.
type cacheInformers struct{ c crcache.Cache }

var _ k8s.Informers = cacheInformers{}

// Informer returns the cache's informer of unstructured objects of gvk,
// which the cache starts (and, once started, syncs before returning).
func (ci cacheInformers) Informer(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (k8s.Informer, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	inf, err := ci.c.GetInformer(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("ctrlmgr: the manager's cache gives no informer for %s: %w", gvk, err)
	}
	if sii, ok := inf.(toolscache.SharedIndexInformer); ok {
		return indexed{sii}, nil
	}
	// A cache of some namespaces runs one informer per namespace behind
	// one that has no indexer: objects are read through the cache.
	return read{inf, ci.c, gvk}, nil
}

// indexed is a cache's informer of all namespaces: objects are read from
// its indexer, as the standalone Source reads its own.
type indexed struct{ toolscache.SharedIndexInformer }

func (i indexed) Get(namespace, name string) (*unstructured.Unstructured, bool) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok, err := i.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok
}

// read is a cache's informer of several namespaces: objects are read
// through the cache, which copies them.
type read struct {
	crcache.Informer
	c   crcache.Cache
	gvk schema.GroupVersionKind
}

func (r read) Get(namespace, name string) (*unstructured.Unstructured, bool) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.gvk)
	if err := r.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return nil, false
	}
	return u, true
}
