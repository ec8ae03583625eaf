package ctrlmgr_test

import (
	"context"
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/ctrlmgr"
)

// A kubebuilder main with opbus added: the manager, its flags
// (--metrics-bind-address, --health-probe-bind-address, --leader-elect)
// and probes are kubebuilder's own; the lines marked "opbus" are all
// there is to add. The example needs an API server, so go test compiles
// it without running it; TestManagerReal runs the same steps.
func Example() {
	var metricsAddr, probeAddr string
	var leaderElect bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metrics endpoint binds to.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Enable leader election for controller manager.")
	flag.Parse()

	// opbus: ctrlmgr.NewManager in place of manager.New (ctrl.NewManager),
	// so that the Source is fenced by the manager's Lease; a clean stop
	// releases the Lease once the bus has drained.
	mgr, err := ctrlmgr.NewManager(config.GetConfigOrDie(), manager.Options{
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        probeAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              "my-operator.example.com",
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		os.Exit(1)
	}
	// … the project's reconcilers: SetupWithManager(mgr) …

	src, err := ctrlmgr.New(mgr, &k8s.Options{Resources: []k8s.Resource{ // opbus
		{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}},
	}})
	if err != nil {
		os.Exit(1)
	}
	bus, err := opbus.New(src.BusOptions(nil)) // opbus
	if err != nil {
		os.Exit(1)
	}
	err = bus.Handle("size", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) { // opbus: the handlers
		return opbus.Active(""), nil
	}, opbus.On{Kinds: []string{"Widget.example.com"}, Fields: []string{"spec.size"}})
	if err != nil {
		os.Exit(1)
	}
	if err := ctrlmgr.Add(mgr, src, bus); err != nil { // opbus
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		os.Exit(1)
	}
	if err := mgr.Start(signals.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
