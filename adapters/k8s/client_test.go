package k8s

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
)

// TestClientRefused checks that a Client that cannot write says why, from
// every method: no event, an event of a gone object, a Source that is not
// running.
func TestClientRefused(t *testing.T) {
	src, err := New(&Options{Config: &rest.Config{Host: "https://127.0.0.1:1"},
		Resources: []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}}})
	if err != nil {
		t.Fatal(err)
	}
	key := opbus.Key{Kind: "Pod", Namespace: "ns", Name: "p"}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u"}}
	for _, c := range []struct {
		why  string
		ev   *opbus.Event
		want string
	}{
		{"nil event", nil, "the event names no handler"},
		{"an event of no handler", &opbus.Event{Key: key, New: pod}, "the event names no handler"},
		{"a delete event", &opbus.Event{Type: opbus.Delete, Key: key, Old: pod, Handler: "h"}, `handler "h" on Pod ns/p: the object is gone`},
		{"before Run", &opbus.Event{Type: opbus.Create, Key: key, New: pod, Handler: "h"}, "the Source is not running"},
	} {
		cl := src.Client(c.ev)
		_, err1 := cl.Apply(context.Background(), map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}})
		err2 := cl.ApplyStatus(context.Background(), map[string]any{"x": 1})
		for _, err := range []error{err1, err2} {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error containing %q", c.why, err, c.want)
			}
		}
	}
}

// TestFieldManager checks the field managers of handlers: the operator's
// name and the handler's ID, or a shortened form with a hash that the API
// server accepts (at most 128 printable ASCII bytes).
func TestFieldManager(t *testing.T) {
	long := strings.Repeat("h", 200)
	for _, c := range []struct{ name, handler, want string }{
		{"", "webapp", "opbus/webapp"},
		{"shop", "deploy", "shop/deploy"},
	} {
		if got := FieldManager(c.name, c.handler); got != c.want {
			t.Errorf("FieldManager(%q, %q) = %q, want %q", c.name, c.handler, got, c.want)
		}
	}
	for _, h := range []string{long, "tab\there", "naïve"} {
		got := FieldManager("", h)
		if len(got) > 128 || strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
			t.Errorf("FieldManager(%q) = %q: over 128 bytes or not printable ASCII", h, got)
		}
		if got == FieldManager("", h+"x") {
			t.Errorf("FieldManager of %q and of %q+x are both %q", h, h, got)
		}
	}
}

// TestHolds checks the comparison that skips applies: every field of the
// applied object, at any depth, is in the cached one with an equal value
// (whole numbers of any type compare by value); lists match element by
// element.
func TestHolds(t *testing.T) {
	have := map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"app": "a", "x": "y"}},
		"spec": map[string]any{"replicas": int64(2), "ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}}}
	for _, c := range []struct {
		want any
		ok   bool
	}{
		{map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "a"}}}, true},
		{map[string]any{"spec": map[string]any{"replicas": float64(2)}}, true},
		{map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": 80}}}}, true},
		{map[string]any{"spec": map[string]any{"replicas": int64(3)}}, false},
		{map[string]any{"spec": map[string]any{"ports": []any{}}}, false},
		{map[string]any{"spec": map[string]any{"paused": true}}, false},
		{map[string]any{"metadata": "a"}, false},
	} {
		if got := holds(have, c.want); got != c.ok {
			t.Errorf("holds(%v) = %v, want %v", c.want, got, c.ok)
		}
	}
}
