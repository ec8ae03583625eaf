package main

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/opbus/opbus/adapters/k8s"
)

// newSharded returns the Source of a replica of webapp's shard ring
// (--shards): run by mgr, which serves its metrics and probes and stops it
// on SIGTERM, but on informers of its own rather than the manager's cache.
//
// A shard ring gives each replica the WebApps whose uid hashes into its
// buckets (and their Deployments and Services, which go with their
// controller), and the buckets move as replicas come and go. The Source's
// own informers list and watch with the shard selector of its buckets
// where the API server applies one (the ShardedListAndWatch gate), list
// again when its buckets change, and give the bus the cached objects of
// the buckets it takes on. controller-runtime's cache can do none of this:
// the list options of its informers are fixed when the manager is built
// (cache.Options.ByObject has label and field selectors, no shard
// selector), and an informer of the cache cannot be asked for its objects
// by bucket. So the replica keeps the manager for what it is good at and
// watches on its own; where the server does not select, it filters on its
// side either way, and says so once in its log.
//
// opts are the operator's options; newSharded sets the connection from
// mgr, the ring, and metrics registered on controller-runtime's registry,
// which the manager serves on --metrics-bind-address.
func newSharded(mgr ctrl.Manager, opts *k8s.Options, shards *k8s.Shards) (*k8s.Source, error) {
	m, err := k8s.NewMetrics(&k8s.MetricsOptions{Registerer: metrics.Registry})
	if err != nil {
		return nil, err
	}
	o := *opts
	o.Config, o.HTTPClient, o.Scheme = mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme()
	o.Metrics = m
	o.Shards = shards
	return k8s.New(&o)
}
