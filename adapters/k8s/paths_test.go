package k8s

import (
	"encoding/json"
	"testing"
)

func TestOwnWritesOnly(t *testing.T) {
	own, err := newOwnWrites(namesFor(""), true, map[string]bool{"Ready": true, "size": true})
	if err != nil {
		t.Fatal(err)
	}
	base := `{"metadata":{"resourceVersion":"1","annotations":{"opbus.dev/record":""},"finalizers":["opbus.dev/cleanup"]},
		"spec":{"size":1},"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Other","status":"True"}]}}`
	for _, tc := range []struct {
		name, new string
		want      bool
	}{
		{"the same state (a resync)", base, true},
		{"the record and the resource version", `{"metadata":{"resourceVersion":"2","annotations":{"opbus.dev/record":"{\"v\":2}"},"finalizers":["opbus.dev/cleanup"]},
			"spec":{"size":1},"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Other","status":"True"}]}}`, true},
		{"our conditions, one changed and one added", `{"metadata":{"resourceVersion":"2","annotations":{"opbus.dev/record":""},"finalizers":["opbus.dev/cleanup"]},
			"spec":{"size":1},"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Other","status":"True"},{"type":"size","status":"True"}]}}`, true},
		{"the finalizer removed", `{"metadata":{"resourceVersion":"2","annotations":{"opbus.dev/record":""}},
			"spec":{"size":1},"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Other","status":"True"}]}}`, true},
		{"another writer's condition", `{"metadata":{"resourceVersion":"2","annotations":{"opbus.dev/record":""},"finalizers":["opbus.dev/cleanup"]},
			"spec":{"size":1},"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Other","status":"False"}]}}`, false},
		{"the spec", `{"metadata":{"resourceVersion":"2","annotations":{"opbus.dev/record":""},"finalizers":["opbus.dev/cleanup"]},
			"spec":{"size":2},"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Other","status":"True"}]}}`, false},
		{"another annotation", `{"metadata":{"resourceVersion":"2","annotations":{"opbus.dev/record":"","x":"y"},"finalizers":["opbus.dev/cleanup"]},
			"spec":{"size":1},"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Other","status":"True"}]}}`, false},
		{"conditions that cannot be keyed", `{"metadata":{"resourceVersion":"2","annotations":{"opbus.dev/record":""},"finalizers":["opbus.dev/cleanup"]},
			"spec":{"size":1},"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Ready","status":"True"}]}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old, new map[string]any
			if err := json.Unmarshal([]byte(base), &old); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.new), &new); err != nil {
				t.Fatal(err)
			}
			if got := own.only(old, new); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	noFinalizer, err := newOwnWrites(namesFor(""), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if noFinalizer.only(map[string]any{"metadata": map[string]any{"finalizers": []any{"a"}}}, map[string]any{"metadata": map[string]any{}}) {
		t.Errorf("a finalizer change counts as the adapter's own on a resource without its finalizer")
	}
}
