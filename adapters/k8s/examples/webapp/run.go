package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/ctrlmgr"
)

// flags are webapp's command-line settings.
type flags struct {
	k8s.Flags
	LeaderElectionNamespace string
	ProbeInterval           time.Duration
	ProbeTimeout            time.Duration
	// The leader election's durations, controller-runtime's defaults
	// unless set. With --shards, LeaseDuration and RetryPeriod are the
	// shard ring's: how long a replica's Lease lasts unrenewed, and how
	// often it is renewed.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// shardRing is the name of webapp's shard ring: the value of the label
// opbus.dev/shard-ring on its replicas' Leases.
const shardRing = "webapp"

// The resources webapp watches: WebApps, and the Deployments and Services
// they control, watched only to relate them to their WebApp.
var (
	webapps     = schema.GroupVersionResource{Group: "example.opbus.dev", Version: "v1", Resource: "webapps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	services    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// run builds the manager, adds the operator to it and runs it until ctx
// ends.
func run(ctx context.Context, f flags, logger *slog.Logger) error {
	cfg, err := k8s.LoadConfig(os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	if f.Shards && f.LeaderElect {
		return errors.New("--shards and --leader-elect exclude each other: sharded replicas split the WebApps between them, an election gives them all to one; pass one of them")
	}
	ns := f.LeaderElectionNamespace
	if ns == "" {
		if ns = os.Getenv("POD_NAMESPACE"); ns == "" {
			ns = "default"
		}
	}
	// ctrlmgr.NewManager instead of ctrl.NewManager: the opbus Source is
	// then fenced by the manager's Lease, and writes nothing once its
	// renew deadline has passed. A clean stop (SIGTERM) releases the
	// Lease once the bus has drained, so that another replica takes over
	// at once: the program exits right after mgr.Start returns.
	mgr, err := ctrlmgr.NewManager(cfg, ctrl.Options{
		Cache:                         cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Metrics:                       metricsserver.Options{BindAddress: f.MetricsBindAddress},
		HealthProbeBindAddress:        f.HealthProbeBindAddress,
		LeaderElection:                f.LeaderElect,
		LeaderElectionID:              "webapp.example.opbus.dev",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &f.LeaseDuration,
		RenewDeadline:                 &f.RenewDeadline,
		RetryPeriod:                   &f.RetryPeriod,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	var shards *k8s.Shards
	if f.Shards {
		shards = &k8s.Shards{Namespace: ns, Ring: shardRing, LeaseDuration: f.LeaseDuration, RenewPeriod: f.RetryPeriod}
	}
	if err := setup(mgr, logger, f.ProbeInterval, f.ProbeTimeout, shards); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// setup adds the operator to mgr: this is all a kubebuilder project
// adds to its main to run opbus handlers. With shards (--shards) the
// replica is a member of that shard ring instead (see newSharded).
func setup(mgr ctrl.Manager, logger *slog.Logger, probeInterval, probeTimeout time.Duration, shards *k8s.Shards) error {
	opts := &k8s.Options{
		Logger: logger,
		// The handler "ready" is the Ready condition; the summary of
		// every slot is Available.
		SummaryCondition: "available",
		Resources: []k8s.Resource{
			{GVR: webapps},
			{GVR: deployments, Owned: true},
			{GVR: services, Owned: true},
		},
	}
	var src *k8s.Source
	var err error
	if shards != nil {
		src, err = newSharded(mgr, opts, shards)
	} else {
		src, err = ctrlmgr.New(mgr, opts)
	}
	if err != nil {
		return err
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		return err
	}
	op := &operator{src: src, probeInterval: probeInterval, probeTimeout: probeTimeout}
	if err := op.register(bus); err != nil {
		return err
	}
	return ctrlmgr.Add(mgr, src, bus)
}
