package k8s

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
)

// TestControllerOf: an object of an Owned resource relates to the owner
// its ownerReferences name with controller: true, by kind as KindOf spells
// it, in its namespace unless the owner's kind is a cluster-scoped
// resource of the Source; other objects relate to nothing.
func TestControllerOf(t *testing.T) {
	s := &Source{kinds: map[string]*resource{
		"ConfigMap":          {cfg: Resource{Owned: true}, namespaced: true},
		"Pod":                {namespaced: true},
		"Widget.example.com": {namespaced: false},
	}}
	ref := func(apiVersion, kind, name string, controller any) any {
		r := map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name}
		if controller != nil {
			r["controller"] = controller
		}
		return r
	}
	doc := func(refs ...any) map[string]any {
		return map[string]any{"metadata": map[string]any{"ownerReferences": refs}}
	}
	cm := opbus.Key{Kind: "ConfigMap", Namespace: "ns", Name: "c"}
	cases := []struct {
		name string
		key  opbus.Key
		obj  map[string]any
		want []opbus.Key
	}{
		{"controller in a group", cm, doc(ref("apps/v1", "Deployment", "web", true)),
			[]opbus.Key{{Kind: "Deployment.apps", Namespace: "ns", Name: "web"}}},
		{"the controller among owners", cm, doc(ref("v1", "Pod", "p", nil), ref("v1", "Pod", "q", false), ref("v1", "Pod", "r", true)),
			[]opbus.Key{{Kind: "Pod", Namespace: "ns", Name: "r"}}},
		{"cluster-scoped owner", cm, doc(ref("example.com/v1", "Widget", "w", true)),
			[]opbus.Key{{Kind: "Widget.example.com", Name: "w"}}},
		{"owners, no controller", cm, doc(ref("v1", "Pod", "p", false)), nil},
		{"a bad apiVersion", cm, doc(ref("a/b/c", "Pod", "p", true)), nil},
		{"no ownerReferences", cm, map[string]any{}, nil},
		{"a resource not Owned", opbus.Key{Kind: "Pod", Namespace: "ns", Name: "p"}, doc(ref("v1", "Pod", "r", true)), nil},
		{"a kind the Source does not watch", opbus.Key{Kind: "Secret", Namespace: "ns", Name: "s"}, doc(ref("v1", "Pod", "r", true)), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := s.controllerOf(c.key, c.obj); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestBusOptionsRelated: BusOptions declares relations only when a
// resource is Owned, and keeps the caller's own Related besides.
func TestBusOptionsRelated(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	source := func(owned bool) *Source {
		s, err := New(&Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Resources: []Resource{{GVR: gvr, Owned: owned}}})
		if err != nil {
			t.Fatal(err)
		}
		s.kinds = map[string]*resource{"ConfigMap": {cfg: Resource{GVR: gvr, Owned: owned}, namespaced: true}}
		return s
	}
	if o := source(false).BusOptions(nil); o.Related != nil {
		t.Errorf("Related is set without an Owned resource")
	}
	mine := opbus.Key{Kind: "Mine", Name: "m"}
	o := source(true).BusOptions(&opbus.Options{Related: func(opbus.Key, map[string]any) []opbus.Key { return []opbus.Key{mine} }})
	key := opbus.Key{Kind: "ConfigMap", Namespace: "ns", Name: "c"}
	obj := map[string]any{"metadata": map[string]any{"ownerReferences": []any{
		map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "p", "controller": true}}}}
	want := []opbus.Key{mine, {Kind: "Pod", Namespace: "ns", Name: "p"}}
	if got := o.Related(key, obj); !slices.Equal(got, want) {
		t.Errorf("Related = %v, want %v", got, want)
	}
}
