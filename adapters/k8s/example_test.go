package k8s_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// An operator that reports crashed containers. It needs a cluster, so it
// has no output to check: it reads $KUBECONFIG, or the in-cluster
// configuration, and runs until interrupted. examples/podwatch is the
// complete program, with its RBAC.
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	k8s.RouteKlog(logger)
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		logger.Error("no cluster", "err", err)
		return
	}
	src, err := k8s.New(&k8s.Options{
		Config:    cfg,
		Resources: []k8s.Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}},
		Logger:    logger,
	})
	if err != nil {
		logger.Error("k8s.New", "err", err)
		return
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		logger.Error("opbus.New", "err", err)
		return
	}
	err = bus.Handle("crash-watch", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		for _, c := range ev.Changes {
			logger.Info("container status changed", "pod", ev.Key.String(), "change", c.String())
		}
		return opbus.Active(""), nil
	}, opbus.On{Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}})
	if err != nil {
		logger.Error("Handle", "err", err)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := src.Run(ctx, bus); err != nil {
		logger.Error("Run", "err", err)
	}
}

// BusOptions completes the bus's options for the Source: its store and
// status sink, the usual list keys and the per-write noise to ignore. New
// does not contact the API server, so this runs anywhere.
func ExampleSource_BusOptions() {
	src, err := k8s.New(&k8s.Options{
		Config: &rest.Config{Host: "https://127.0.0.1:6443"},
		Resources: []k8s.Resource{{
			GVR:        schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
			Namespaces: []string{"team-a"},
			Finalizer:  true,
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := src.BusOptions(&opbus.Options{Workers: 8})
	fmt.Println("workers:", opts.Workers)
	fmt.Println("containerStatuses keyed by:", opts.ListKeys["containerStatuses"])
	fmt.Println("ignored:", opts.Ignore)

	bus, err := opbus.New(opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	noop := func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil }
	err = bus.Handle("bookkeeping", noop, opbus.On{Fields: []string{`metadata.annotations["opbus.dev/record"]`}})
	fmt.Println(err)
	// Output:
	// workers: 8
	// containerStatuses keyed by: name
	// ignored: [metadata.resourceVersion metadata.managedFields metadata.generation metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]]
	// opbus: handler "bookkeeping": field metadata.annotations["opbus.dev/record"] is ignored by the bus (per-write noise or the library's own writes), so it would never fire
}

func ExampleKindOf() {
	fmt.Println(k8s.KindOf(schema.GroupKind{Kind: "Pod"}))
	fmt.Println(k8s.KindOf(schema.GroupKind{Group: "apps", Kind: "Deployment"}))
	fmt.Println(k8s.KindOf(schema.GroupKind{Group: "example.com", Kind: "Widget"}))
	// Output:
	// Pod
	// Deployment.apps
	// Widget.example.com
}

func ExampleConditionType() {
	fmt.Println(k8s.ConditionType("crash-watch"))
	fmt.Println(k8s.ConditionType("probe health"))
	fmt.Println(k8s.ConditionType("CrashWatch"))
	fmt.Println(k8s.ConditionType("example.com/crash-watch"))
	// Output:
	// CrashWatch
	// ProbeHealth
	// CrashWatch
	// ExampleComCrashWatch
}

// A handler that writes: it applies a Deployment named after its WebApp,
// owned by it, and copies the Deployment's readiness to the WebApp's
// status.readyReplicas, which it declares in On.Writes so that the write
// does not run it again. A run on an unchanged input sends nothing.
func ExampleSource_Client() {
	var cfg *rest.Config // a cluster's configuration
	src, err := k8s.New(&k8s.Options{Config: cfg, Resources: []k8s.Resource{
		{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "webapps"}},
		{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Owned: true},
	}})
	if err != nil {
		return
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		return
	}
	_ = bus.Handle("deploy", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		var app struct {
			Spec struct {
				Image    string `json:"image"`
				Replicas int32  `json:"replicas"`
			} `json:"spec"`
		}
		if err := opbus.Decode(ev.New, &app); err != nil {
			return opbus.Status{}, opbus.Permanent(err)
		}
		labels := map[string]string{"app": ev.Key.Name}
		c := src.Client(ev)
		_, err := c.Apply(ctx, appsv1ac.Deployment(ev.Key.Name, ev.Key.Namespace).
			WithLabels(labels).
			WithSpec(appsv1ac.DeploymentSpec().
				WithReplicas(app.Spec.Replicas).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
				WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
					WithSpec(corev1ac.PodSpec().WithContainers(
						corev1ac.Container().WithName("app").WithImage(app.Spec.Image))))))
		if err != nil {
			return opbus.Status{}, err
		}
		ready := int64(0)
		deps, _ := ev.New[opbus.RelatedField].(map[string]any)["Deployment.apps"].(map[string]any)
		if d, ok := deps[ev.Key.Name].(map[string]any); ok {
			ready, _ = d["status"].(map[string]any)["readyReplicas"].(int64)
		}
		return opbus.Active(""), c.ApplyStatus(ctx, map[string]any{"readyReplicas": ready})
	}, opbus.On{
		Kinds:  []string{"WebApp.example.com"},
		Fields: []string{"spec.image", "spec.replicas", `related["Deployment.apps"][*].status.readyReplicas`},
		Writes: []string{"status.readyReplicas"},
	})
	_ = src.Run(context.Background(), bus)
}

// A handler that prunes: it lists the Jobs its CronJob controls from the
// informer cache (no request), keeps the newest three and deletes the
// others, each under the uid it listed, with their Pods in the
// background. Its condition is Degraded, an abnormal-true type: True
// while the pruner fails; there is no summary condition.
func ExampleClient_Delete() {
	var cfg *rest.Config // a cluster's configuration
	src, err := k8s.New(&k8s.Options{Config: cfg, Resources: []k8s.Resource{
		{GVR: schema.GroupVersionResource{Group: "batch.example.com", Version: "v1", Resource: "cronjobs"}},
		{GVR: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, Owned: true},
	},
		Conditions: map[string]k8s.Condition{
			"prune": {Type: "Degraded", AbnormalTrue: true},
		},
		NoSummaryCondition: true,
	})
	if err != nil {
		return
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		return
	}
	_ = bus.Handle("prune", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		c := src.Client(ev)
		jobs, err := c.List(ctx, "Job", &k8s.ListOptions{Controlled: true}) // "Job" is Job.batch, the one watched
		if err != nil {
			return opbus.Status{}, err
		}
		slices.SortFunc(jobs, func(a, b *unstructured.Unstructured) int {
			return b.GetCreationTimestamp().Compare(a.GetCreationTimestamp().Time)
		})
		for _, j := range jobs[min(3, len(jobs)):] {
			if err := c.Delete(ctx, j, &k8s.DeleteOptions{Propagation: metav1.DeletePropagationBackground}); err != nil {
				return opbus.Status{}, err
			}
		}
		return opbus.Active(fmt.Sprintf("%d jobs kept", min(3, len(jobs)))), nil
	}, opbus.On{Kinds: []string{"CronJob.batch.example.com"}, Fields: []string{`related["Job.batch"][*].metadata.name`}})
	_ = src.Run(context.Background(), bus)
}

// ExampleShards runs an operator as one of several replicas that split
// its objects: started with --shards, each replica holds a Lease labelled
// opbus.dev/shard-ring=webapp in the namespace "webapp-system" and handles
// only the objects of the buckets of the hash space the ring gives it.
// Without --shards it handles every object.
func ExampleShards() {
	var flags k8s.Flags
	fs := flag.NewFlagSet("webapp", flag.ContinueOnError)
	flags.Bind(fs)
	if err := fs.Parse([]string{"--shards"}); err != nil {
		fmt.Println(err)
		return
	}
	opts := &k8s.Options{
		Config:    &rest.Config{Host: "https://127.0.0.1:6443"},
		Name:      "webapp",
		Resources: []k8s.Resource{{GVR: schema.GroupVersionResource{Group: "example.opbus.dev", Version: "v1", Resource: "webapps"}}},
		Shards:    flags.ShardRing(k8s.Shards{Namespace: "webapp-system"}),
	}
	if _, err := k8s.New(opts); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("sharded:", opts.Shards != nil, "in", opts.Shards.Namespace)
	// Output: sharded: true in webapp-system
}
