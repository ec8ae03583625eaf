package jsonvalue

import (
	"reflect"
	"testing"
)

// TestProject checks what Project keeps: the value at each path, once
// (a path below a kept one adds nothing, whichever comes first), nothing
// for a path the object lacks, everything for an empty path, and values
// shared with the object, which stays as it was.
func TestProject(t *testing.T) {
	spec := map[string]any{"a": 1.0, "b": map[string]any{"c": "x"}}
	obj := map[string]any{"spec": spec, "status": map[string]any{"phase": "Running", "n": 2.0}, "s": "v"}
	tests := []struct {
		keys [][]string
		want map[string]any
	}{
		{nil, map[string]any{}},
		{[][]string{{"spec", "b", "c"}, {"spec"}}, map[string]any{"spec": spec}},
		{[][]string{{"status", "phase"}, {"spec", "a"}, {"nope", "x"}, {"s", "deeper"}},
			map[string]any{"status": map[string]any{"phase": "Running"}, "spec": map[string]any{"a": 1.0}}},
		{[][]string{{"status", "n"}, {}}, obj},
	}
	for _, tc := range tests {
		got := Project(obj, tc.keys)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Project(%q): got %v, want %v", tc.keys, got, tc.want)
		}
	}
	if got := Project(obj, [][]string{{"spec"}}); reflect.ValueOf(got["spec"]).Pointer() != reflect.ValueOf(spec).Pointer() {
		t.Error("Project: the value kept is a copy, want the object's own")
	}
	if len(obj) != 3 || len(spec) != 2 {
		t.Errorf("Project modified the object: %v", obj)
	}
}
