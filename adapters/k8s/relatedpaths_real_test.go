package k8s_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestRelatedPathsChecked: Run refuses, before it watches, a related
// path whose kind is no watched resource's (with the spelling meant: a
// kind outside the core group is qualified), whose kind relates to
// nothing (neither Owned nor Referenced), whose kind alone (no group) is
// that of several related resources (naming them), or whose field no
// object of the related kind can have by its schema (with "did you
// mean", for a kind named alone too). Before, such a handler started and
// silently never ran.
func TestRelatedPathsChecked(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	resources := []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespaces: []string{ns}, Owned: true},
		{GVR: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, Namespaces: []string{ns}, Owned: true},
		{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespaces: []string{ns}},
	}
	for _, c := range []struct{ field, want string }{
		{"related.Jobs[*].status.active", `names the related kind "Jobs", which no watched resource holds, so it would never change: did you mean related["Job.batch"][*].status.active?`},
		{"related.Job[*].staus.active", `no Job.batch can have (by the API server's schema of jobs in batch/v1): the object has no field "staus": did you mean status?`},
		{"related.Deployment[*].status.replicas", "Deployment.apps, whose objects relate to none"},
		{`related["Job.batch"][*].staus.active`, "did you mean status?"},
		{"related.ConfigMap[*].dat.state", "did you mean data?"},
		{`related["Deployment.apps"][*].status.replicas`, "Deployment.apps, whose objects relate to none"},
	} {
		src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Resources: resources, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		bus, err := opbus.New(src.BusOptions(nil))
		if err != nil {
			t.Fatal(err)
		}
		must(t, bus.Handle("h", func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil },
			opbus.On{Kinds: []string{widgetKind}, Fields: []string{c.field}}))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // Run returns an error before it watches
		err = src.Run(ctx, bus)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `handler "h"`) {
			t.Errorf("Run with a handler on %s: %v, want an error naming the handler and containing %q", c.field, err, c.want)
		}
	}
}
