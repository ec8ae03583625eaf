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

// sprocketCRD is a CRD that no other test installs, with a schema that
// names spec.size.
const sprocketCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "sprockets.fresh.opbus.dev"},
  "spec": {
    "group": "fresh.opbus.dev",
    "scope": "Namespaced",
    "names": {"plural": "sprockets", "singular": "sprocket", "kind": "Sprocket", "listKind": "SprocketList"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
      }}}
    }]
  }
}`

// TestInstallCRDsSchemaCheckable: right after InstallCRDs of a new CRD
// returns, a Source's startup check already sees the CRD's schema and
// refuses a misspelt field. Before, the schema was published 2-4 s later
// and the check was skipped (logged at Info).
func TestInstallCRDsSchemaCheckable(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	env.InstallCRDs(t, obj(t, "%s", sprocketCRD))
	ns := env.Namespace(t)
	gvr := schema.GroupVersionResource{Group: "fresh.opbus.dev", Version: "v1", Resource: "sprockets"}
	src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: gvr, Namespaces: []string{ns}}}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	must(t, bus.Handle("h", func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil },
		opbus.On{Fields: []string{"spec.sise"}}))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := src.Run(ctx, bus); err == nil || !strings.Contains(err.Error(), "did you mean spec.size?") {
		t.Errorf("Run right after InstallCRDs with a handler on spec.sise: %v, want an error suggesting spec.size", err)
	}
}
