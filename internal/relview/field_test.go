package relview

import (
	"fmt"
	"testing"

	"github.com/opbus/opbus/internal/pathsyntax"
)

// TestFields checks that a field is added once per path, keeps its
// index, and matches the kinds and names of its patterns.
func TestFields(t *testing.T) {
	var fs Fields[string]
	same := func(a, b string) bool { return a == b }
	a := Field[string]{Path: "related.Pod", Kind: Pattern{Key: "Pod"}, Name: AnyOne}
	b := Field[string]{Path: "related[*].web", Kind: AnyOne, Name: Pattern{Key: "web"}}
	if fs.Add(a, same) != 0 || fs.Add(b, same) != 1 || fs.Add(a, same) != 0 || len(fs) != 2 {
		t.Fatalf("indexes wrong or a path added twice: %v", fs)
	}
	names := map[string]string{"po": "Pod"}
	byName := Field[string]{Kind: Pattern{Key: "po"}, Name: AnyOne}
	for _, c := range []struct {
		f          Field[string]
		kind, name string
		want       bool
	}{
		{a, "Pod", "x", true},
		{a, "Job", "x", false},
		{b, "Job", "web", true},
		{b, "Job", "db", false},
		{byName, "Pod", "x", true},
		{byName, "Job", "x", false},
	} {
		if got := c.f.Matches(c.kind, c.name, names); got != c.want {
			t.Errorf("%+v matches %s %s = %v, want %v", c.f, c.kind, c.name, got, c.want)
		}
	}
}

// TestNewField checks that a related field's kind and name are keys or
// any, and its rest what follows them.
func TestNewField(t *testing.T) {
	key := func(k string) pathsyntax.Segment { return pathsyntax.Segment{Kind: pathsyntax.Key, Key: k} }
	anyOne := pathsyntax.Segment{Kind: pathsyntax.Any}
	same := func(s pathsyntax.Segment) pathsyntax.Segment { return s }
	for _, tc := range []struct {
		path []pathsyntax.Segment
		want string // kind, name and rest; "" when not a related field
	}{
		{[]pathsyntax.Segment{key("related")}, "{ true} { true} 0"},                                        // omitted: any
		{[]pathsyntax.Segment{key("related"), key("Pod")}, "{Pod false} { true} 0"},                        // a kind
		{[]pathsyntax.Segment{key("related"), anyOne, key("web"), key("status")}, "{ true} {web false} 1"}, // any kind, a name, a rest
		{[]pathsyntax.Segment{key("related"), {Kind: pathsyntax.Index}}, ""},                               // neither a key nor any
	} {
		f, ok := NewField(tc.path, same)
		got := ""
		if ok {
			got = fmt.Sprint(f.Kind, " ", f.Name, " ", len(f.Rest))
		}
		if got != tc.want {
			t.Errorf("NewField(%v) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
