package k8s

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func TestOptionsValidate(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	cases := []struct {
		name string
		opts Options
		err  string // "" for valid
	}{
		{"valid", Options{Config: cfg, Resources: []Resource{{GVR: pods}}}, ""},
		{"no config", Options{Resources: []Resource{{GVR: pods}}}, "Config is nil"},
		{"no resources", Options{Config: cfg}, "nothing to watch"},
		{"no version", Options{Config: cfg, Resources: []Resource{{GVR: schema.GroupVersionResource{Resource: "pods"}}}}, "needs a version"},
		{"twice", Options{Config: cfg, Resources: []Resource{{GVR: pods}, {GVR: pods, Namespaces: []string{"a"}}}}, "listed twice"},
		{"bad label selector", Options{Config: cfg, Resources: []Resource{{GVR: pods, LabelSelector: "a in (b"}}}, `label selector "a in (b"`},
		{"bad field selector", Options{Config: cfg, Resources: []Resource{{GVR: pods, FieldSelector: "a"}}}, `field selector "a"`},
		{"empty namespace", Options{Config: cfg, Resources: []Resource{{GVR: pods, Namespaces: []string{""}}}}, "empty namespace"},
		{"bad mode", Options{Config: cfg, Resources: []Resource{{GVR: pods, Status: 9}}}, "unknown StatusMode(9)"},
		{"lease without name", Options{Config: cfg, Resources: []Resource{{GVR: pods}}, LeaderElection: &LeaderElection{Namespace: "ns"}}, "Namespace and Name"},
		{"lease durations", Options{Config: cfg, Resources: []Resource{{GVR: pods}},
			LeaderElection: &LeaderElection{Namespace: "ns", Name: "l", LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}}, "want lease > renew deadline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(&c.opts)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("New: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "k8s: ")):
				t.Fatalf("New: got %v, want an error starting k8s: and saying %q", err, c.err)
			}
		})
	}
}

func TestBusOptions(t *testing.T) {
	src, err := New(&Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Resources: []Resource{{GVR: pods}}})
	if err != nil {
		t.Fatal(err)
	}
	opts := src.BusOptions(&opbus.Options{Workers: 3, ListKeys: map[string]string{"ports": "name"}, Ignore: []string{"status.x"}})
	if opts.Workers != 3 || opts.Store != src.Store() || opts.Sink != src.Sink() {
		t.Errorf("BusOptions lost fields or did not set the store and sink: %+v", opts)
	}
	if opts.ListKeys["ports"] != "name" || opts.ListKeys["containers"] != "name" {
		t.Errorf("ListKeys = %v: want the caller's to win and the rest added", opts.ListKeys)
	}
	if ListKeys["ports"] != "containerPort" {
		t.Error("BusOptions modified the package's ListKeys")
	}
	want := []string{"status.x", "metadata.resourceVersion", "metadata.managedFields", "metadata.generation", `metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`}
	if strings.Join(opts.Ignore, " ") != strings.Join(want, " ") {
		t.Errorf("Ignore = %q, want %q (no repeats)", opts.Ignore, want)
	}
	if opts.Incarnation == nil || opts.Incarnation(map[string]any{"metadata": map[string]any{"uid": "u1"}}) != "u1" {
		t.Errorf("BusOptions did not set Incarnation to metadata.uid")
	}
	bus, err := opbus.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	noop := func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil }
	for _, f := range []string{`metadata.annotations["opbus.dev/record"]`, `metadata.annotations["opbus.dev/status"]`} {
		if err := bus.Handle("h "+f, noop, opbus.On{Fields: []string{f}}); err == nil {
			t.Errorf("a handler on %s, which the adapter writes, was accepted", f)
		}
	}
}

// TestCheckConditionSubscriptions: a handler subscribed to a condition
// the adapter writes is refused when every kind it runs on has its
// conditions written by the adapter, and accepted when one has not (a
// Pod's own conditions).
func TestCheckConditionSubscriptions(t *testing.T) {
	r := func(kind string, m StatusMode) *resource {
		return &resource{gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: strings.ToLower(kind) + "s"}, keyKind: kind, mode: m}
	}
	rs := []*resource{r("Widget", StatusConditions), r("Pod", StatusAnnotation)}
	ready := []opbus.Path{opbus.MustParsePath(conditionPath("Ready"))}
	ignore := []string{conditionPath("Ready")}
	if err := checkConditionSubscriptions([]opbus.Subscription{{ID: "any", Fields: ready}}, rs, ignore); err != nil {
		t.Errorf("a handler on every kind: %v", err)
	}
	if err := checkConditionSubscriptions([]opbus.Subscription{{ID: "pods", Kinds: []string{"Pod"}, Fields: ready}}, rs, ignore); err != nil {
		t.Errorf("a handler on Pods: %v", err)
	}
	err := checkConditionSubscriptions([]opbus.Subscription{{ID: "widgets", Kinds: []string{"Widget"}, Fields: ready}}, rs, ignore)
	if err == nil || !strings.Contains(err.Error(), `"widgets"`) {
		t.Errorf("a handler on Widgets only: got %v, want an error naming it", err)
	}
}

func TestCheckSubscriptions(t *testing.T) {
	subs := []opbus.Subscription{{ID: "fin", Fields: []opbus.Path{opbus.MustParsePath("metadata.finalizers")}}}
	if err := checkSubscriptions(subs, []string{finalizersPath}); err == nil || !strings.Contains(err.Error(), `"fin"`) {
		t.Errorf("got %v, want an error naming the handler", err)
	}
	if err := checkSubscriptions(subs, []string{conditionPath("Ready")}); err != nil {
		t.Error(err)
	}
}

func TestKubernetesGroup(t *testing.T) {
	for g, want := range map[string]bool{"": true, "apps": true, "networking.k8s.io": true, "gateway.networking.k8s.io": true, "example.com": false} {
		if got := kubernetesGroup(g); got != want {
			t.Errorf("kubernetesGroup(%q) = %v, want %v", g, got, want)
		}
	}
}

func TestRunOnce(t *testing.T) {
	src, err := New(&Options{Config: &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, Resources: []Resource{{GVR: pods}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "nil bus") {
		t.Errorf("Run(nil bus): got %v", err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Run(context.Background(), bus); err == nil || !strings.HasPrefix(err.Error(), "k8s: resource pods: discovering v1") {
		t.Errorf("Run without a server: got %v, want a discovery error naming the resource", err)
	}
	if err := src.Run(context.Background(), bus); err == nil || !strings.Contains(err.Error(), "Run called twice") {
		t.Errorf("second Run: got %v", err)
	}
	if _, err := src.Store().Load(context.Background(), opbus.Key{Kind: "Pod", Name: "x"}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Load before Run succeeded: got %v", err)
	}
}
