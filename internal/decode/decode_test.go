package decode

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorsNameRelativePaths checks the first invariant: an error names
// the path of the value that does not fit, relative to the value decoded,
// and both types, never a string's content.
func TestErrorsNameRelativePaths(t *testing.T) {
	var n int8
	err := Into(300, &n)
	var e *Error
	if !errors.As(err, &e) || e.Path != nil || !strings.Contains(e.Reason, "out of its range") {
		t.Errorf("300 into int8: got %v, want an out-of-range error at the root", err)
	}
	var s struct{ Spec struct{ Items []int } }
	err = Into(map[string]any{"Spec": map[string]any{"Items": []any{1, "secret"}}}, &s)
	if !errors.As(err, &e) || len(e.Path) != 3 || e.Path[2].Index != 1 || strings.Contains(e.Reason, "secret") {
		t.Errorf("a string in []int: got %v (path %v), want an error at Spec.Items[1] without the string", err, e.Path)
	}
}

// TestSharesWhatItStores checks that a map[string]any is stored, not copied.
func TestSharesWhatItStores(t *testing.T) {
	v := map[string]any{"a": 1}
	var m map[string]any
	if err := Into(v, &m); err != nil {
		t.Fatal(err)
	}
	m["b"] = 2
	if _, ok := v["b"]; !ok {
		t.Error("Into stored a copy of a map[string]any")
	}
}
