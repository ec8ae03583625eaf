// Cronjob is an operator for the CronJob custom resource (crd.yaml beside
// this file: group batch.example.com, version v1), the controller of the
// kubebuilder book's CronJob tutorial written with opbus.
//
// At each time of spec.schedule (cron format: minute hour day-of-month
// month day-of-week, or @hourly and the like) it creates a Job from
// spec.jobTemplate, named <cronjob>-<unix time> and controlled by the
// CronJob, unless spec.suspend is set, the run is more than
// spec.startingDeadlineSeconds late, or spec.concurrencyPolicy Forbid
// holds it back while an earlier Job is active (Replace deletes that Job
// first; Allow, the default, runs beside it). It reports the active Jobs
// in status.active and the last run in status.lastScheduleTime, with a
// Schedule and a Jobs condition and their Ready summary, and deletes the
// oldest finished Jobs beyond spec.successfulJobsHistoryLimit (3) and
// spec.failedJobsHistoryLimit (1). The last run is kept in the object's
// record, so a Job the history limit deleted is not created again, and
// the next run is kept there too: a restart neither loses it nor repeats
// one. A CronJob with no last run kept yet, which an earlier controller
// ran, goes on from the later of its status.lastScheduleTime and its
// Jobs' scheduled-at annotations.
//
// It reads the cluster from $KUBECONFIG, or from the Pod it runs in, and
// serves Prometheus metrics, /healthz and /readyz on controller-runtime's
// usual flags. rbac.yaml grants what it needs: a ServiceAccount cronjob in
// the namespace cronjob.
//
//	kubectl apply -f crd.yaml
//	KUBECONFIG=$HOME/.kube/config go run .
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/opbus/opbus/adapters/k8s"
)

func main() {
	var f k8s.Flags
	f.Bind(nil) // --metrics-bind-address, --health-probe-bind-address, --leader-elect
	leaseNamespace := flag.String("leader-election-namespace", os.Getenv("POD_NAMESPACE"), "the namespace of the Lease (--leader-elect); empty: default")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	k8s.RouteKlog(logger)
	if err := run(f, *leaseNamespace, logger); err != nil {
		fmt.Fprintln(os.Stderr, "cronjob:", err)
		os.Exit(1)
	}
}

// run runs the operator until SIGINT or SIGTERM.
func run(f k8s.Flags, leaseNamespace string, logger *slog.Logger) error {
	cfg, err := k8s.LoadConfig(os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	if leaseNamespace == "" {
		leaseNamespace = "default"
	}
	metrics, err := k8s.NewMetrics(nil)
	if err != nil {
		return err
	}
	op, err := setup(settings{Config: cfg, Logger: logger, Metrics: metrics,
		Leader: f.LeaderElection(k8s.LeaderElection{Namespace: leaseNamespace, Name: "cronjob.batch.example.com"})})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	servers, err := op.src.Serve(ctx, f)
	if err != nil {
		return err
	}
	err = op.run(ctx)
	stop()
	return errors.Join(err, servers.Wait())
}
