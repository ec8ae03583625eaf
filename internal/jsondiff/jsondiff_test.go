package jsondiff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/opbus/opbus/internal/pathsyntax"
)

// change is the walker's change in a test: op and the path's text.
func change(op Op, at []Segment, old, new any) string {
	var b strings.Builder
	for i, s := range at {
		pathsyntax.Write(&b, s.Kind, s.Key, s.Value, s.Index, i == 0)
	}
	return fmt.Sprintf("%d %s", op, b.String())
}

func key(k string) Segment { return Segment{Kind: pathsyntax.Key, Key: k} }

// TestSortedAndIgnored checks two invariants: changes come out in path
// order whatever the map order, and an ignored path is never reported,
// a container holding only ignored content counting as absent.
func TestSortedAndIgnored(t *testing.T) {
	c := NewPatterns([]Pattern{{Path: []Segment{key("m"), key("skip")}, Ignore: true},
		{Path: []Segment{key("l")}, Field: "name"}}, nil)
	old := map[string]any{"b": 1, "a": 1, "l": []any{map[string]any{"name": "x", "v": 1}, map[string]any{"name": "y"}}}
	new := map[string]any{"b": 2, "a": 2, "m": map[string]any{"skip": 1},
		"l": []any{map[string]any{"name": "y"}, map[string]any{"name": "x", "v": 2}}}
	for range 20 {
		got := strings.Join(NewWalker(change).Compare(&c, old, new), "; ")
		if want := "1 a; 1 b; 1 l[name=x].v"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}

// TestEqualAllocatesNothing checks that equal inputs cost no allocation.
func TestEqualAllocatesNothing(t *testing.T) {
	c := NewPatterns(nil, map[string]string{"items": "name"})
	v := map[string]any{"spec": map[string]any{"items": []any{map[string]any{"name": "a"}}, "n": 1.5}}
	w := NewWalker(change)
	if n := testing.AllocsPerRun(100, func() { w.Compare(&c, v, v) }); n != 0 {
		t.Errorf("Compare of equal values: %v allocations, want 0", n)
	}
}

// TestCompareInDeclinesAbove checks that CompareIn declines when a change
// lies above a path of its tree.
func TestCompareInDeclinesAbove(t *testing.T) {
	var tree KeyTree
	tree.Add([]string{"spec", "x"})
	c := NewPatterns(nil, nil)
	if _, ok := NewWalker(change).CompareIn(&c, map[string]any{}, map[string]any{"spec": map[string]any{}}, &tree); ok {
		t.Error("spec added above spec.x: got an answer, want a decline")
	}
	got, ok := NewWalker(change).CompareIn(&c, map[string]any{"spec": map[string]any{"x": 1, "y": 1}},
		map[string]any{"spec": map[string]any{"x": 2, "y": 2}}, &tree)
	if !ok || strings.Join(got, "; ") != "1 spec.x" {
		t.Errorf("got %v, %v; want the change at spec.x only", got, ok)
	}
}

func TestRoots(t *testing.T) {
	in := [][]string{{"status", "phase"}, {"spec"}, {"metadata", "labels"}, {"spec", "containers"}, {"status", "phase"}, {"metadata"}}
	roots, tree := Roots(in)
	if got, want := fmt.Sprint(roots), "[[metadata] [spec] [status phase]]"; got != want {
		t.Errorf("Roots(%v) = %s, want %s (none at or below another, in order)", in, got, want)
	}
	if got, want := fmt.Sprint(tree.keys), "[metadata spec status]"; got != want {
		t.Errorf("the tree's first level = %s, want %s", got, want)
	}
	if in[0][0] != "status" {
		t.Errorf("Roots modified its argument: %v", in)
	}
}
