package k8s

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/opbus/opbus"
)

// badInput is one bad input of the Kubernetes adapter: what a user wrote,
// and the error they see.
type badInput struct {
	area  string
	input string
	err   func(t *testing.T) error
	want  string
}

// fakeServer is the discovery document of the API server the catalogue's
// Sources run against: Pods (with status), ConfigMaps (without),
// Namespaces (cluster-scoped) and widgets.example.com (with status).
func fakeServer() *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true},
			{Name: "pods/status", Kind: "Pod", Namespaced: true},
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true},
			{Name: "namespaces", Kind: "Namespace"},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true},
			{Name: "widgets/status", Kind: "Widget", Namespaced: true},
		}},
	}}}
}

// runWith runs a Source for resources, against fakeServer, with the
// handlers register adds, and returns what Run returns. Every bad input
// here is refused before Run contacts anything else.
func runWith(t *testing.T, resources []Resource, register func(b *opbus.Bus) error) error {
	return runWithBus(t, resources, nil, register)
}

// runWithBus is runWith with options for the bus. The server publishes
// the schema of widgets.example.com (testdata/openapi-widgets.json) and no
// other.
func runWithBus(t *testing.T, resources []Resource, bopts *opbus.Options, register func(b *opbus.Bus) error) error {
	src, err := New(&Options{Config: &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, Resources: resources})
	if err != nil {
		t.Fatal(err)
	}
	src.disc, src.openapi = fakeServer(), fakeSchemas(t, nil)
	bus, err := opbus.New(src.BusOptions(bopts))
	if err != nil {
		t.Fatal(err)
	}
	if register != nil {
		if err := register(bus); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return src.Run(ctx, bus)
}

// runningPod returns a Source that watches Pods and holds the Pod
// default/web in its cache, with an annotation of the given size besides
// the adapter's.
func runningPod(t *testing.T, other int) *Source {
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "resourceVersion": "7",
			"annotations": map[string]any{"example.com/notes": strings.Repeat("n", other)}},
	}}
	s, _, _ := fakeSource(t, pods, "Pod", StatusAnnotation, pod)
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	if err := inf.GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	s.kinds["Pod"].informers[""] = inf
	return s
}

var web = opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}

func noop(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil }

func badInputs() []badInput {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	newWith := func(o Options) func(*testing.T) error {
		return func(*testing.T) error {
			_, err := New(&o)
			return err
		}
	}
	one := func(r Resource) Options { return Options{Config: cfg, Resources: []Resource{r}} }
	gvr := func(group, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
	}
	configMaps, namespaces, gadgets := gvr("", "configmaps"), gvr("", "namespaces"), gvr("example.com", "gadgets")
	lease := func(le LeaderElection) Options {
		o := one(Resource{GVR: pods})
		o.LeaderElection = &le
		return o
	}
	return []badInput{
		{"k8s kubeconfig", "a file that does not exist", func(*testing.T) error {
			_, err := LoadConfig("/nonexistent/opbus/kubeconfig")
			return err
		}, "k8s: kubeconfig /nonexistent/opbus/kubeconfig: no such file or directory"},
		{"k8s kubeconfig", "malformed YAML", func(*testing.T) error {
			_, err := LoadConfig("testdata/kubeconfig-malformed.yaml")
			return err
		}, "k8s: kubeconfig testdata/kubeconfig-malformed.yaml: not a kubeconfig: yaml: line 7: did not find expected ',' or '}'"},
		{"k8s kubeconfig", "current-context naming no context", func(*testing.T) error {
			_, err := LoadConfig("testdata/kubeconfig-no-context.yaml")
			return err
		}, "k8s: kubeconfig testdata/kubeconfig-no-context.yaml: invalid configuration: [context was not found for specified context: staging, cluster has no server defined]"},

		{"k8s kubeconfig", `LoadConfig("") outside a Pod`, func(t *testing.T) error {
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			t.Setenv("KUBERNETES_SERVICE_PORT", "")
			_, err := LoadConfig("")
			return err
		}, "k8s: kubeconfig: none given, and not in a Pod: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"},

		{"k8s options", "Options{Config: nil}", newWith(Options{Config: nil, Resources: []Resource{{GVR: pods}}}),
			"k8s: Options.Config is nil: a Source needs a client configuration, such as the one rest.InClusterConfig returns"},
		{"k8s options", "Options{Resources: nil}", newWith(Options{Config: cfg}),
			"k8s: Options.Resources is empty: nothing to watch"},
		{"k8s options", "Resource{GVR: {}}", newWith(one(Resource{})),
			`k8s: resource "/, Resource=": a GVR needs a version and a resource, such as {Version: "v1", Resource: "pods"}`},
		{"k8s options", `Resource{GVR: {Resource: "pods"}}`, newWith(one(Resource{GVR: schema.GroupVersionResource{Resource: "pods"}})),
			`k8s: resource "/, Resource=pods": a GVR needs a version and a resource, such as {Version: "v1", Resource: "pods"}`},
		{"k8s options", "pods listed twice", newWith(Options{Config: cfg, Resources: []Resource{{GVR: pods}, {GVR: pods, Namespaces: []string{"apps"}}}}),
			"k8s: resource pods is listed twice: watch each resource once, in one version"},
		{"k8s options", `LabelSelector: "app in (web"`, newWith(one(Resource{GVR: pods, LabelSelector: "app in (web"})),
			`k8s: resource pods: label selector "app in (web": unable to parse requirement: found '', expected: ',' or ')'`},
		{"k8s options", `LabelSelector: "app=web!"`, newWith(one(Resource{GVR: pods, LabelSelector: "app=web!"})),
			`k8s: resource pods: label selector "app=web!": found '!', expected: ',' or 'end of string'`},
		{"k8s options", `FieldSelector: "status.phase"`, newWith(one(Resource{GVR: pods, FieldSelector: "status.phase"})),
			`k8s: resource pods: field selector "status.phase": invalid selector: 'status.phase'; can't understand 'status.phase'`},
		{"k8s options", `Namespaces: [""]`, newWith(one(Resource{GVR: pods, Namespaces: []string{""}})),
			"k8s: resource pods: empty namespace in Namespaces (leave Namespaces empty to watch all)"},
		{"k8s options", `Namespaces: ["apps", "apps"]`, newWith(one(Resource{GVR: pods, Namespaces: []string{"apps", "apps"}})),
			`k8s: resource pods: namespace "apps" is listed twice`},
		{"k8s options", "Status: StatusMode(9)", newWith(one(Resource{GVR: pods, Status: 9})),
			"k8s: resource pods: unknown StatusMode(9)"},
		{"k8s options", `LeaderElection{Namespace: "ops"}`, newWith(lease(LeaderElection{Namespace: "ops"})),
			`k8s: LeaderElection needs the Namespace and Name of its Lease (got "ops"/"")`},
		{"k8s options", `LeaderElection{Namespace: "ops", Name: "op", LeaseDuration: 5s, RenewDeadline: 5s}`, newWith(lease(LeaderElection{Namespace: "ops", Name: "op", LeaseDuration: 5 * time.Second, RenewDeadline: 5 * time.Second})),
			"k8s: LeaderElection durations: lease 5s, renew deadline 5s, retry period 2s: want lease > renew deadline > 1.2 × retry period > 0"},
		{"k8s options", `Options{Informers: i, Resources: []Resource{{Namespaces: ["apps"]}}}`, newWith(Options{Config: cfg, Informers: noInformers{}, Resources: []Resource{{GVR: pods, Namespaces: []string{"apps"}}}}),
			`k8s: resource pods: Namespaces [apps], LabelSelector "" and FieldSelector "" must be empty when Options.Informers provides the informers, which watch what their provider is configured to watch (for a controller-runtime manager, its cache.Options: DefaultNamespaces, ByObject)`},

		{"k8s run", "a resource the server does not serve", func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: gadgets}}, nil)
		}, "k8s: resource gadgets is not served by the API server in example.com/v1"},
		{"k8s run", "Status: StatusConditions on ConfigMaps", func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: configMaps, Status: StatusConditions}}, nil)
		}, "k8s: resource configmaps has no status subresource to write conditions to: set Status: StatusAnnotation"},
		{"k8s run", `Namespaces: ["apps"] on Namespaces`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: namespaces, Namespaces: []string{"apps"}}}, nil)
		}, "k8s: resource namespaces is cluster-scoped: it cannot be watched in namespaces [apps]"},
		{"k8s run", "ReadOnly on ConfigMaps, with a handler without Kinds", func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}, {GVR: configMaps, ReadOnly: true}}, func(b *opbus.Bus) error {
				return b.Handle("all", noop, opbus.On{})
			})
		}, `k8s: resource configmaps is ReadOnly, but handler "all" runs on its kind ConfigMap (it lists the kind in On.Kinds, or lists no Kinds): ` +
			"the adapter writes the record and statuses of each object a handler runs on; restrict the handler's Kinds, or drop ReadOnly"},
		{"k8s run", `Referenced: [{Kind: "Backup", Field: "spec.target"}] on ConfigMaps`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}, {GVR: configMaps, Referenced: []Reference{{Kind: "Backup", Field: "spec.target"}}}}, nil)
		}, `k8s: resource configmaps: Referenced names kind "Backup", which no resource of the Source holds (kinds: ConfigMap, Widget.example.com)`},
		{"k8s run", `Referenced: [{Kind: "Widget.example.com", Field: "spec.targets[*]"}] on ConfigMaps`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}, {GVR: configMaps, Referenced: []Reference{{Kind: "Widget.example.com", Field: "spec.targets[*]"}}}}, nil)
		}, `k8s: resource configmaps: Referenced field spec.targets[*] of Widget.example.com: want map keys only (such as spec.target), naming a string field that holds a name`},
		{"k8s run", "a handler of Widgets only (conditions) on the condition of its own slot", func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}, {GVR: pods}}, func(b *opbus.Bus) error {
				return b.Handle("size", noop, opbus.On{Kinds: []string{"Widget.example.com"}, Fields: []string{"status.conditions[type=Size]"}})
			})
		}, `k8s: handler "size" subscribes to status.conditions[type=Size], which the adapter writes itself and the bus therefore ignores: it would never fire`},
		{"k8s run", "a handler on metadata.finalizers, with Finalizer", func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets, Finalizer: true}}, func(b *opbus.Bus) error {
				if err := b.Handle("cleanup", noop, opbus.On{Types: []opbus.EventType{opbus.Delete}}); err != nil {
					return err
				}
				return b.Handle("finalizers", noop, opbus.On{Fields: []string{"metadata.finalizers"}})
			})
		}, `k8s: handler "finalizers" subscribes to metadata.finalizers, which the adapter writes itself and the bus therefore ignores: it would never fire`},
		{"k8s run", `On{Fields: ["spec.verison"]} on Widgets`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}}, func(b *opbus.Bus) error {
				return b.Handle("version", noop, opbus.On{Fields: []string{"spec.verison"}})
			})
		}, `k8s: handler "version" subscribes to spec.verison, which no object can have: Widget.example.com (by the API server's schema of widgets in example.com/v1): ` +
			`spec has no field "verison": did you mean spec.version? known: version, extra, members, port, raw, size, … (10 in all)`},
		{"k8s run", `On{Fields: ["spec.members[nmae=a]"]} on Widgets`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}}, func(b *opbus.Bus) error {
				return b.Handle("members", noop, opbus.On{Fields: []string{"spec.members[nmae=a]"}})
			})
		}, `k8s: handler "members" subscribes to spec.members[nmae=a], which no object can have: Widget.example.com (by the API server's schema of widgets in example.com/v1): ` +
			`the elements of spec.members have no field "nmae" to match: did you mean name? known: name, role`},
		{"k8s run", `On{Fields: ["spec.size.value"]} on Widgets`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}}, func(b *opbus.Bus) error {
				return b.Handle("size", noop, opbus.On{Fields: []string{"spec.size.value"}})
			})
		}, `k8s: handler "size" subscribes to spec.size.value, which no object can have: Widget.example.com (by the API server's schema of widgets in example.com/v1): ` +
			`spec.size is an integer: nothing is below it`},
		{"k8s run", `opbus.Options{Ignore: ["status.phse"]} on Widgets`, func(t *testing.T) error {
			return runWithBus(t, []Resource{{GVR: widgets}}, &opbus.Options{Ignore: []string{"status.phse"}}, nil)
		}, `k8s: ignored path status.phse (opbus.Options.Ignore) can never match, as a field it names no object can have: Widget.example.com (by the API server's schema of widgets in example.com/v1): ` +
			`status has no field "phse": did you mean status.phase? known: phase, conditions`},
		{"k8s run", `On{Kinds: ["Widget"]} on Widgets`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}}, func(b *opbus.Bus) error {
				return b.Handle("widgets", noop, opbus.On{Kinds: []string{"Widget"}})
			})
		}, `k8s: handler "widgets" lists kind "Widget", which no watched resource holds, so it would never run: did you mean "Widget.example.com"? ` +
			`(kinds watched: Widget.example.com; a kind outside the core group is qualified with its group, as KindOf writes it)`},
		{"k8s run", `handlers "crash-watch" and "crash_watch" on Widgets`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}}, func(b *opbus.Bus) error {
				if err := b.Handle("crash-watch", noop, opbus.On{}); err != nil {
					return err
				}
				return b.Handle("crash_watch", noop, opbus.On{})
			})
		}, `k8s: slots "crash-watch" and "crash_watch" both give condition type CrashWatch: each slot writes a condition named by k8s.ConditionType (its id in CamelCase); rename one of the slots`},
		{"k8s run", `handler "ready" on Widgets`, func(t *testing.T) error {
			return runWith(t, []Resource{{GVR: widgets}}, func(b *opbus.Bus) error {
				return b.Handle("ready", noop, opbus.On{})
			})
		}, `k8s: slot "ready" gives condition type Ready, the summary's own (set Options.SummaryCondition to name the summary otherwise): each slot writes a condition named by k8s.ConditionType (its id in CamelCase); rename one of the slots`},
		{"k8s run", "Run(ctx, nil)", func(t *testing.T) error {
			src, err := New(&Options{Config: cfg, Resources: []Resource{{GVR: pods}}})
			if err != nil {
				t.Fatal(err)
			}
			return src.Run(context.Background(), nil)
		}, "k8s: Run: nil bus"},
		{"k8s run", "Run called twice", func(t *testing.T) error {
			src, err := New(&Options{Config: cfg, Resources: []Resource{{GVR: pods}}})
			if err != nil {
				t.Fatal(err)
			}
			src.disc = fakeServer()
			bus, err := opbus.New(src.BusOptions(nil))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the first Run returns at once
			if err := src.Run(ctx, bus); err != nil {
				t.Fatal(err)
			}
			return src.Run(context.Background(), bus)
		}, "k8s: Run called twice: a Source and its bus run once"},

		{"k8s store", "a record of 256 KiB", func(t *testing.T) error {
			return runningPod(t, 0).store.Save(context.Background(), web, bytes.Repeat([]byte("x"), MaxAnnotationBytes))
		}, "k8s: Pod default/web: writing annotation opbus.dev/record of 262144 bytes would take the object's annotations to 262177 bytes (17 in others), " +
			"past the API server's limit of 256 KiB (262144 bytes): annotations too large"},
		{"k8s store", "a 1 KiB record next to a 255 KiB annotation", func(t *testing.T) error {
			return runningPod(t, 255<<10).store.Save(context.Background(), web, bytes.Repeat([]byte("x"), 1<<10))
		}, "k8s: Pod default/web: writing annotation opbus.dev/record of 1024 bytes would take the object's annotations to 262177 bytes (261137 in others), " +
			"past the API server's limit of 256 KiB (262144 bytes): annotations too large"},
		{"k8s store", "an object of a kind no Resource watches", func(t *testing.T) error {
			_, err := runningPod(t, 0).store.Load(context.Background(), opbus.Key{Kind: "Widget.example.com", Namespace: "default", Name: "w"})
			return err
		}, `k8s: Widget.example.com default/w: no watched resource holds kind "Widget.example.com" (kinds: Pod)`},
		{"k8s status", "a status message of 256 KiB on a Pod", func(t *testing.T) error {
			s := runningPod(t, 0)
			u, _ := s.kinds["Pod"].cached(web)
			return s.sink.PutStatus(context.Background(), web, u.Object, opbus.Blocked(strings.Repeat("m", MaxAnnotationBytes)), nil)
		}, "k8s: Pod default/web: writing annotation opbus.dev/status of 262176 bytes would take the object's annotations to 262209 bytes (17 in others), " +
			"past the API server's limit of 256 KiB (262144 bytes): annotations too large"},
		{"k8s client", "Client(ev) before Run", func(t *testing.T) error {
			src, err := New(&Options{Config: cfg, Resources: []Resource{{GVR: pods}}})
			if err != nil {
				t.Fatal(err)
			}
			return src.Client(&opbus.Event{Type: opbus.Create, Key: web, New: map[string]any{}, Handler: "h"}).ApplyStatus(context.Background(), map[string]any{"ready": true})
		}, `k8s: Client for handler "h" on Pod default/web: the Source is not running: use the client inside a handler while Run runs`},
		{"k8s client", `ApplyStatus({"phase": …}) with On{Writes: ["status.ready"]}`, func(t *testing.T) error {
			return clientOf(t, []string{"status.ready"}).ApplyStatus(context.Background(), map[string]any{"ready": true, "phase": "Up"})
		}, `k8s: ApplyStatus for handler "h" on Pod default/web: status.phase is not under the handler's On.Writes [status.ready]: add it to On.Writes, so that the handler's own write does not run it again`},
		{"k8s client", "Apply of an object without a kind", func(t *testing.T) error {
			_, err := clientOf(t, nil).Apply(context.Background(), map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "c"}})
			return err
		}, `k8s: Apply for handler "h" on Pod default/web: the object has apiVersion "v1", kind "" and name "c": expected all three`},
	}
}

// clientOf returns the Client of handler h, which writes writes, for an
// event of the Pod default/web of a Source that runs.
func clientOf(t *testing.T, writes []string) *Client {
	s := runningPod(t, 0)
	b, err := opbus.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Handle("h", noop, opbus.On{Writes: writes}); err != nil {
		t.Fatal(err)
	}
	s.watch = &watch{s: s, bus: b}
	u, _ := s.kinds["Pod"].cached(web)
	return s.Client(&opbus.Event{Type: opbus.Update, Key: web, New: u.Object, Handler: "h"})
}

const (
	catalogueDoc   = "../../docs/bad-input.md"
	catalogueBegin = "<!-- adapters/k8s: generated by adapters/k8s catalogue_test.go -->"
	catalogueEnd   = "<!-- end of adapters/k8s -->"
)

// TestCatalogue checks the message of every bad input of the adapter, and
// that the Kubernetes section of docs/bad-input.md shows exactly these.
// With OPBUS_WRITE_CATALOGUE=1 it writes that section instead, at the end
// of the file if it has none yet.
func TestCatalogue(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n| where | bad input | the error |\n|---|---|---|\n", catalogueBegin)
	for _, e := range badInputs() {
		err := e.err(t)
		if err == nil {
			t.Errorf("%s %q: no error", e.area, e.input)
			continue
		}
		if got := err.Error(); got != e.want {
			t.Errorf("%s %q:\n got: %s\nwant: %s", e.area, e.input, got, e.want)
		}
		if msg := err.Error(); strings.Contains(msg, os.TempDir()) || strings.Contains(msg, wd) {
			t.Errorf("%s %q: the message depends on where the test runs: %s", e.area, e.input, msg)
		}
		fmt.Fprintf(&b, "| %s | `%s` | `%s` |\n", e.area, escapeCell(e.input), escapeCell(err.Error()))
	}
	b.WriteString(catalogueEnd)
	section := b.String()

	doc, err := os.ReadFile(catalogueDoc)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	current := string(doc)
	i, j := strings.Index(current, catalogueBegin), strings.Index(current, catalogueEnd)
	if os.Getenv("OPBUS_WRITE_CATALOGUE") == "1" {
		switch {
		case i >= 0 && j > i:
			current = current[:i] + section + current[j+len(catalogueEnd):]
		case current == "":
			current = section + "\n"
		default:
			current = strings.TrimRight(current, "\n") + "\n\n" + section + "\n"
		}
		if err := os.WriteFile(catalogueDoc, []byte(current), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if i < 0 || j < i || current[i:j+len(catalogueEnd)] != section {
		t.Errorf("the adapters/k8s section of docs/bad-input.md is out of date: in adapters/k8s, run OPBUS_WRITE_CATALOGUE=1 go test -run TestCatalogue .")
	}
}

// escapeCell makes s fit in a cell of a Markdown table, in a code span.
func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "`", "'")
}
