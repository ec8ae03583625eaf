// Webapp is an operator for the WebApp custom resource (crd.yaml beside
// this file: group example.opbus.dev, version v1), written as a kubebuilder
// project would be, with opbus inside a controller-runtime manager.
//
// For each WebApp it creates a Deployment and a Service named after it, in
// its namespace, labelled app: <name> and controlled by it; keeps the
// Deployment's image and replicas in step with spec.image and
// spec.replicas; copies the Deployment's status.readyReplicas to the
// WebApp's status.readyReplicas, with a Ready condition that is True
// exactly when it equals spec.replicas; and, when spec.healthURL is set,
// GETs it every -probe-interval, with a Health condition that is True on a
// 2xx answer and False, naming the HTTP status, otherwise. A GET gives up
// after -probe-timeout (1s, as the kubelet's probes): the handlers of one
// WebApp run one at a time, as a reconcile does, so a long poll would hold
// back its readiness.
//
// It reads the cluster from $KUBECONFIG, or from the Pod it runs in, and
// serves Prometheus metrics, /healthz and /readyz on controller-runtime's
// usual flags. rbac.yaml grants what it needs: a ServiceAccount webapp in
// the namespace webapp.
//
//	kubectl apply -f crd.yaml
//	KUBECONFIG=$HOME/.kube/config go run . -leader-elect=false
//
// With --leader-elect, one replica handles every WebApp and the others
// wait. With --shards, the replicas split the WebApps between them: each
// holds a Lease labelled opbus.dev/shard-ring=webapp in the namespace of
// --leader-election-namespace, and handles the WebApps whose uid hashes
// into its part of the ring, with their Deployments and Services; a
// replica that stops or dies hands its WebApps over to the others. A
// sharded replica watches with informers of its own, not the manager's
// cache (see newSharded for why). The two flags exclude each other.
//
//	go run . --shards --leader-election-namespace=webapp --metrics-bind-address=:8080 --health-probe-bind-address=:8081
//	go run . --shards --leader-election-namespace=webapp --metrics-bind-address=:8090 --health-probe-bind-address=:8091
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/opbus/opbus/adapters/k8s"
)

func main() {
	var f flags
	f.Bind(nil) // --metrics-bind-address, --health-probe-bind-address, --leader-elect, --shards
	flag.StringVar(&f.LeaderElectionNamespace, "leader-election-namespace", "", "the namespace of the Lease (with --shards, of the shard ring's Leases); empty: the Pod's, or default outside a cluster")
	flag.DurationVar(&f.ProbeInterval, "probe-interval", 10*time.Second, "how often to GET each WebApp's spec.healthURL")
	flag.DurationVar(&f.ProbeTimeout, "probe-timeout", time.Second, "how long a GET of spec.healthURL may take (the WebApp's other handlers wait for it)")
	flag.DurationVar(&f.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a replica waits, after the leader's last renewal it saw, before it takes the Lease (with --shards: how long a replica's Lease lasts unrenewed)")
	flag.DurationVar(&f.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long after its last successful renewal the leader stops handling and writing")
	flag.DurationVar(&f.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often the Lease is renewed, or tried for (with --shards: how often a replica renews its Lease and reads the others')")
	debug := flag.Bool("debug", false, "log every dispatch")
	flag.Parse()

	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctrl.SetLogger(logr.FromSlogHandler(logger.Handler()))
	k8s.RouteKlog(logger)
	if err := run(ctrl.SetupSignalHandler(), f, logger); err != nil {
		fmt.Fprintln(os.Stderr, "webapp:", err)
		os.Exit(1)
	}
}
