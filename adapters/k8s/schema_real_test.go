package k8s_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

var (
	gizmosGVR  = schema.GroupVersionResource{Group: "schema.opbus.dev", Version: "v1", Resource: "gizmos"}
	gizmoKind  = "Gizmo.schema.opbus.dev"
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// gizmoCRD is a custom resource with a structural schema: named fields, a
// map, a list keyed by name, an int-or-string and a subtree that keeps
// unknown fields.
const gizmoCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "gizmos.schema.opbus.dev"},
  "spec": {
    "group": "schema.opbus.dev",
    "scope": "Namespaced",
    "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
          "version": {"type": "string"},
          "size": {"type": "integer"},
          "port": {"x-kubernetes-int-or-string": true},
          "selector": {"type": "object", "additionalProperties": {"type": "string"}},
          "members": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "role": {"type": "string"}}}},
          "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }},
        "status": {"type": "object", "properties": {
          "phase": {"type": "string"},
          "conditions": {"type": "array", "items": {"type": "object", "properties": {
            "type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"},
            "message": {"type": "string"}, "lastTransitionTime": {"type": "string"}, "observedGeneration": {"type": "integer"}}}}
        }}
      }}}
    }]
  }
}`

// ensureGizmos installs the Gizmo CRD and waits until the API server
// publishes its schema, which it does a moment after the resource is served.
func ensureGizmos(t *testing.T, env *kubetest.Env) {
	t.Helper()
	env.InstallCRDs(t, obj(t, "%s", gizmoCRD))
	cfg := env.AdminConfig()
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	oc := openapi.NewClientWithContext(d.RESTClient())
	eventually(t, "the schema of gizmos is published", func() bool {
		paths, err := oc.PathsWithContext(t.Context())
		if err != nil || paths["apis/schema.opbus.dev/v1"] == nil {
			return false
		}
		data, err := paths["apis/schema.opbus.dev/v1"].SchemaWithContext(t.Context(), "application/json")
		return err == nil && strings.Contains(string(data), `"kind":"Gizmo"`)
	})
}

// runErr runs a Source for resources with the handlers register adds, and
// returns what Run returns before the bus would start: an error, or nil
// if Run is still running after it has handled the first object (Run is
// then stopped).
func runErr(t *testing.T, env *kubetest.Env, res []k8s.Resource, bopts *opbus.Options, register func(b *opbus.Bus)) error {
	t.Helper()
	src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Resources: res, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(bopts))
	if err != nil {
		t.Fatal(err)
	}
	register(bus)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	return src.Run(ctx, bus)
}

// TestMisspeltFieldsFailAtStart subscribes handlers to paths no Gizmo (a
// custom resource with a structural schema) or Pod can have: Run returns
// an error naming the handler, the path, the resource and the field meant,
// before it watches anything.
func TestMisspeltFieldsFailAtStart(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureGizmos(t, env)
	ns := env.Namespace(t)
	gizmos := []k8s.Resource{{GVR: gizmosGVR, Namespaces: []string{ns}}}
	pods := []k8s.Resource{{GVR: podsGVR, Namespaces: []string{ns}, Status: k8s.StatusAnnotation}}
	both := []k8s.Resource{{GVR: podsGVR, Namespaces: []string{ns}, Status: k8s.StatusAnnotation}, {GVR: configMaps, Namespaces: []string{ns}}}
	for _, tc := range []struct {
		name  string
		res   []k8s.Resource
		kinds []string
		field string
		want  []string
	}{
		{"a misspelt spec field", gizmos, nil, "spec.verison", []string{
			`k8s: handler "h" subscribes to spec.verison, which no object can have: Gizmo.schema.opbus.dev (by the API server's schema of gizmos in schema.opbus.dev/v1): spec has no field "verison": did you mean spec.version?`}},
		{"a misspelt list key", gizmos, nil, "spec.members[nmae=a].role", []string{`the elements of spec.members have no field "nmae" to match: did you mean name?`}},
		{"a misspelt condition field", gizmos, nil, "status.conditions[type=Ready].stauts", []string{`did you mean status.conditions[type=Ready].status?`}},
		{"a field below a string", gizmos, nil, "spec.version.major", []string{`spec.version is a string: nothing is below it`}},
		{"a field below an int-or-string", gizmos, nil, "spec.port.number", []string{`spec.port is an integer or string: nothing is below it`}},
		{"a misspelt metadata field", gizmos, nil, "metadata.lables.app", []string{`metadata has no field "lables": did you mean metadata.labels?`}},
		{"a misspelt Pod field", pods, nil, "spec.nodeNme", []string{`Pod (by the API server's schema of pods in v1): spec has no field "nodeNme": did you mean spec.nodeName?`}},
		{"a misspelt container field", pods, nil, "status.containerStatuses[name=app].stat", []string{`status.containerStatuses[name=app] has no field "stat": did you mean status.containerStatuses[name=app].state?`}},
		{"a field of no kind watched", both, nil, "spec.nodeNme", []string{`Pod (by the API server's schema of pods in v1)`, `ConfigMap (by the API server's schema of configmaps in v1): the object has no field "spec"`}},
		{"a Pod field on the ConfigMap handler", both, []string{"ConfigMap"}, "spec.nodeName", []string{`ConfigMap (by`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Now()
			err := runErr(t, env, tc.res, nil, func(b *opbus.Bus) {
				must(t, b.Handle("h", noop, opbus.On{Kinds: tc.kinds, Fields: []string{tc.field}}))
			})
			if err == nil {
				t.Fatalf("Run returned nil, want an error about %s", tc.field)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			t.Logf("refused in %v: %v", time.Since(begin).Round(time.Millisecond), err)
		})
	}
	t.Run("an ignored path no object can have", func(t *testing.T) {
		err := runErr(t, env, gizmos, &opbus.Options{Ignore: []string{"status.obsrvedGeneration"}}, func(b *opbus.Bus) {})
		want := `k8s: ignored path status.obsrvedGeneration (opbus.Options.Ignore) can never match`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error containing %q", err, want)
		}
	})
}

// TestValidFieldsStart subscribes handlers to paths a Gizmo or a Pod can
// have — list elements by key, by index and by wildcard, map keys, a
// subtree that keeps unknown fields, metadata — and checks that Run starts
// and the handlers run.
func TestValidFieldsStart(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureGizmos(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	fields := map[string][]string{
		gizmoKind: {"spec.version", "spec.members[name=a].role", "spec.members[*].role", "spec.members[0]", "spec.port",
			`spec.selector["app.kubernetes.io/name"]`, "spec.extra.anything.below", "metadata.labels.app",
			`metadata.annotations["example.com/x"]`, "status.conditions[type=Ready].status", "status.phase", "metadata.ownerReferences[*].uid"},
		"Pod": {"spec.containers[name=app].image", "status.containerStatuses[name=app].state.terminated.exitCode",
			"spec.containers[*].env[name=X].value", "metadata.labels.app", "status.phase", "spec.nodeName"},
	}
	var r runs
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: podsGVR, Namespaces: []string{ns}, Status: k8s.StatusNone},
		{GVR: gizmosGVR, Namespaces: []string{ns}, Status: k8s.StatusNone},
	}}, func(b *opbus.Bus) {
		for kind, fs := range fields {
			for i, f := range fs {
				must(t, b.Handle(fmt.Sprintf("%s-%d", kind, i), r.handler(nil), opbus.On{Kinds: []string{kind}, Fields: []string{f}}))
			}
		}
	})
	createPod(t, c, ns, "p")
	g := obj(t, `{"apiVersion":"schema.opbus.dev/v1","kind":"Gizmo","metadata":{"name":"g"},"spec":{"version":"1","members":[{"name":"a","role":"x"}]}}`)
	if _, err := c.Resource(gizmosGVR).Namespace(ns).Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handlers of both kinds run", func() bool {
		return r.count("Pod-0", "p") == 1 && r.count(gizmoKind+"-0", "g") == 1
	})
}

// TestUnknownKindFailsAtStart registers a handler for a kind no Resource
// holds: Run returns an error that names the handler and the kind meant.
func TestUnknownKindFailsAtStart(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureGizmos(t, env)
	ns := env.Namespace(t)
	res := []k8s.Resource{{GVR: gizmosGVR, Namespaces: []string{ns}}}
	for _, tc := range []struct{ kind, want string }{
		{"Gizmo", `k8s: handler "h" lists kind "Gizmo", which no watched resource holds, so it would never run: did you mean "Gizmo.schema.opbus.dev"?`},
		{"gizmos", `did you mean "Gizmo.schema.opbus.dev"?`},
		{"Gizmo.schema.opbus.dev/v1", `did you mean "Gizmo.schema.opbus.dev"?`},
		{"Pod", `k8s: handler "h" lists kind "Pod", which no watched resource holds, so it would never run (kinds watched: Gizmo.schema.opbus.dev;`},
	} {
		err := runErr(t, env, res, nil, func(b *opbus.Bus) {
			must(t, b.Handle("h", noop, opbus.On{Kinds: []string{tc.kind}}))
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kind %q: got %v, want an error containing %q", tc.kind, err, tc.want)
		}
	}
}

func noop(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil }
