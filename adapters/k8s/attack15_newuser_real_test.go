package k8s_test

import (
	"context"
	"encoding/json"
	"flag"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// A new user's operator, written from the README and doc.go alone.
func TestAttackNewUser(t *testing.T) {
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	var f k8s.Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.Bind(fs)
	_ = fs.Parse([]string{"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"})
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Metrics: m, Logger: testLogger(t), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: deployments, Namespaces: []string{ns}, Owned: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = bus.Handle("deploy", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		name, _ := opbus.Get[string](ev.New, "metadata.name")
		c := src.Client(ev)
		labels := map[string]string{"app": name}
		d := appsv1ac.Deployment(name, "").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("web").WithImage("nginx")))))
		if _, err := c.Apply(ctx, d); err != nil {
			return opbus.Status{}, err
		}
		ready, gerr := opbus.Get[int64](ev.New, `related["Deployment.apps"][*].status.readyReplicas`)
		t.Logf("Get with [*]: %d, %v", ready, gerr)
		return opbus.Status{}, c.ApplyStatus(ctx, map[string]any{"readyReplicas": ready})
	}, opbus.On{Kinds: []string{widgetKind},
		Fields: []string{"spec", `related["Deployment.apps"][*].status.readyReplicas`},
		Writes: []string{"status.readyReplicas"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	servers, err := src.Serve(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, bus) }()
	c := dynClient(t, env.AdminConfig())
	createWidget(t, c, ns, "w", `{"size":1}`)
	var last string
	eventually(t, "the status written", func() bool {
		u := get(t, c, widgetsGVR, ns, "w")
		st, _ := u.Object["status"].(map[string]any)
		last = fmt_(st)
		_, ok := st["readyReplicas"]
		return ok
	})
	t.Logf("status: %s", last)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	_ = servers.Wait()
}

func fmt_(v any) string { b, _ := json.Marshal(v); return string(b) }
