// Podwatch is an operator that reports dying containers: a handler
// subscribed to status.containerStatuses logs each container termination
// (container name, exit code, reason) and sets its status slot, which the
// adapter shows in the podwatch.opbus.dev/status annotation of the Pod (the
// operator is named podwatch: see k8s.Options.Name) and in an
// Event; a whole-object handler counts every update.
//
// A container dying changes only its Pod's status, so frameworks that keep
// status out of change detection never see it (nolar/kopf#715); opbus
// does, and its own annotation writes never fire a handler.
//
// Podwatch reads the cluster from $KUBECONFIG, or from the Pod it runs in.
// It watches Pods in every namespace, or in those given with -namespace.
// With -lease-namespace (by default $POD_NAMESPACE, set it with the
// downward API) replicas elect a leader with a Lease named podwatch, and
// only the leader handles. rbac.yaml grants what it needs: a ServiceAccount
// podwatch in the namespace podwatch, allowed to list, watch and patch
// Pods, create Events, and hold its Lease.
//
//	KUBECONFIG=$HOME/.kube/config go run ./examples/podwatch -namespace default
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

func main() {
	namespaces := flag.String("namespace", "", "comma-separated namespaces to watch; empty for all")
	leaseNamespace := flag.String("lease-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the leader election Lease; empty for no election")
	debug := flag.Bool("debug", false, "log every dispatch")
	flag.Parse()

	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	k8s.RouteKlog(logger)

	cfg, err := config()
	if err != nil {
		logger.Error("podwatch: no cluster", "err", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := settings{LeaseNamespace: *leaseNamespace}
	if *namespaces != "" {
		s.Namespaces = strings.Split(*namespaces, ",")
	}
	pw := &podwatch{log: logger}
	if err := pw.run(ctx, cfg, s); err != nil {
		logger.Error("podwatch: stopped", "err", err)
		os.Exit(1)
	}
}

// config returns the configuration of $KUBECONFIG, or the in-cluster one.
func config() (*rest.Config, error) {
	if path := os.Getenv("KUBECONFIG"); path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return nil, errors.New("podwatch: set KUBECONFIG, or run in a Pod")
	}
	return cfg, err
}

// settings are podwatch's command-line settings.
type settings struct {
	Namespaces     []string // empty: all
	LeaseNamespace string   // empty: no leader election
	Identity       string   // leader election identity; empty: generated
}

// podwatch is the operator: its handlers and what they count.
type podwatch struct {
	log     *slog.Logger
	updates atomic.Int64 // runs of the whole-object update handler
}

// run watches Pods until ctx ends.
func (pw *podwatch) run(ctx context.Context, cfg *rest.Config, s settings) error {
	opts := &k8s.Options{
		Config:    cfg,
		Resources: []k8s.Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespaces: s.Namespaces}},
		Logger:    pw.log,
		Name:      "podwatch",
	}
	if s.LeaseNamespace != "" {
		opts.LeaderElection = &k8s.LeaderElection{Namespace: s.LeaseNamespace, Name: "podwatch", Identity: s.Identity}
	}
	src, err := k8s.New(opts)
	if err != nil {
		return err
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		return err
	}
	if err := bus.Handle("terminations", pw.terminations, opbus.On{
		Kinds:  []string{"Pod"},
		Fields: []string{"status.containerStatuses"},
	}); err != nil {
		return err
	}
	if err := bus.Handle("updates", pw.countUpdates, opbus.On{
		Kinds: []string{"Pod"},
		Types: []opbus.EventType{opbus.Update},
	}); err != nil {
		return err
	}
	return src.Run(ctx, bus)
}

// containerStatus is the part of an element of a Pod's
// status.containerStatuses that podwatch reads.
type containerStatus struct {
	Name  string `json:"name"`
	State struct {
		Terminated *termination `json:"terminated"`
	} `json:"state"`
}

// termination is a container's state.terminated.
type termination struct {
	ExitCode   int32  `json:"exitCode"`
	Reason     string `json:"reason"`
	FinishedAt string `json:"finishedAt"`
}

// terminated returns the terminated containers of a Pod by name.
func terminated(pod map[string]any) (map[string]termination, error) {
	statuses, err := opbus.Get[[]containerStatus](pod, "status.containerStatuses")
	if errors.Is(err, opbus.ErrAbsent) { // no container has started yet, or no Pod (ev.Old of a creation)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]termination{}
	for _, cs := range statuses {
		if t := cs.State.Terminated; t != nil {
			out[cs.Name] = *t
		}
	}
	return out, nil
}

// terminations logs each container that terminated since the state last
// handled, and reports the Pod blocked while a container has failed.
func (pw *podwatch) terminations(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	was, err := terminated(ev.Old)
	if err != nil {
		return opbus.Status{}, err
	}
	now, err := terminated(ev.New)
	if err != nil {
		return opbus.Status{}, err
	}
	var failed []string
	for _, name := range slices.Sorted(maps.Keys(now)) {
		t := now[name]
		if old, ok := was[name]; !ok || old != t {
			pw.log.Info("podwatch: container terminated", "pod", ev.Key.Namespace+"/"+ev.Key.Name,
				"container", name, "exitCode", t.ExitCode, "reason", t.Reason)
		}
		if t.ExitCode != 0 {
			failed = append(failed, fmt.Sprintf("container %s terminated: exit %d (%s)", name, t.ExitCode, t.Reason))
		}
	}
	if len(failed) > 0 {
		return opbus.Blocked(strings.Join(failed, "; ")), nil
	}
	return opbus.Active(""), nil
}

// countUpdates counts the updates of Pods.
func (pw *podwatch) countUpdates(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	n := pw.updates.Add(1)
	pw.log.Debug("podwatch: pod updated", "pod", ev.Key.Namespace+"/"+ev.Key.Name, "changes", len(ev.Changes), "updates", n)
	return opbus.Status{}, nil
}
