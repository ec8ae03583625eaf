package relview

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestDecl checks the declared relations: one function per kind, the one
// for every kind as a fallback, other names, and which kinds a field may
// name.
func TestDecl(t *testing.T) {
	var d Decl[string]
	if d.Declared("Pod") || d.Func("Pod") != nil || d.Knows("Pod") {
		t.Fatal("an empty Decl declares Pod")
	}
	pod := func(string, map[string]any) []string { return []string{"pod"} }
	all := func(string, map[string]any) []string { return []string{"all"} }
	if !d.Declare("Pod", pod) || d.Declare("Pod", all) {
		t.Fatal("Declare: the first should succeed and the second not")
	}
	if got := d.Func("Pod")("", nil); got[0] != "pod" {
		t.Fatalf("Func(Pod) is %v's, want pod's: a second Declare replaced it", got)
	}
	if d.Declared("Job") || d.Knows("Job") {
		t.Fatal("Job declared without a function")
	}
	if got := d.Name("po", "Pod"); got != "Pod" || !d.Knows("po") {
		t.Fatalf("Name(po, Pod) = %q, Knows(po) = %v; want Pod and true", got, d.Knows("po"))
	}
	if got := d.Name("po", "Job"); got != "Pod" || d.Names()["po"] != "Pod" {
		t.Fatalf("Name(po, Job) = %q, want Pod (the name is Pod's already)", got)
	}
	if got := d.Name("po", "Pod"); got != "Pod" {
		t.Fatalf("Name(po, Pod) again = %q, want Pod", got)
	}
	d.DeclareAny(all)
	if got := d.Func("Job")("", nil); got[0] != "all" || !d.Knows("Job") || !d.Declared("Job") {
		t.Fatal("the function for every kind does not apply to Job")
	}
	if got := d.Func("Pod")("", nil); got[0] != "pod" {
		t.Fatal("the function for every kind replaced Pod's own")
	}
	if got := d.Kinds(); !slices.Equal(got, []string{"Pod"}) {
		t.Fatalf("Kinds = %v, want [Pod]", got)
	}
}

// TestTargets checks what a relation function's answer becomes: in order,
// without the object itself and repeats; an invalid key and a panic are
// errors.
func TestTargets(t *testing.T) {
	valid := func(k string) error {
		if k == "" {
			return errors.New("empty key")
		}
		return nil
	}
	fn := func(k string, doc map[string]any) []string { return doc["to"].([]string) }
	for _, c := range []struct {
		to   []string
		want []string
		err  string
	}{
		{nil, nil, ""},
		{[]string{"b", "self", "a", "b"}, []string{"b", "a"}, ""},
		{[]string{"a", ""}, nil, "empty key"},
	} {
		got, err := Targets(fn, "self", map[string]any{"to": c.to}, valid)
		if !slices.Equal(got, c.want) || fmt.Sprint(err) != fmt.Sprint(errOrNil(c.err)) {
			t.Errorf("Targets(%v) = %v, %v; want %v, %q", c.to, got, err, c.want, c.err)
		}
	}
	got, err := Targets(fn, "self", map[string]any{}, valid) // a nil "to": the type assertion panics
	var p *Panic
	if got != nil || !errors.As(err, &p) || p.Value == nil {
		t.Fatalf("a panicking function: %v, %v; want nil and a *Panic", got, err)
	}
}

func errOrNil(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

func TestRename(t *testing.T) {
	var d Decl[string]
	for _, tc := range []struct{ name, kind, want string }{
		{"Job", "Job.batch", ""}, // a name for a kind
		{"Job", "Job.batch", ""}, // again: the same kind
		{"Job", "Job.other", `the name is kind "Job.batch"'s already`}, // another kind's name
		{"", "Job.batch", "expected a name and another kind"},
		{"Pod", "Pod", "expected a name and another kind"},
	} {
		err := d.Rename(tc.name, tc.kind)
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("Rename(%q, %q) = %v, want %q", tc.name, tc.kind, err, tc.want)
		}
	}
}
