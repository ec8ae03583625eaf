package canonical

import (
	"errors"
	"reflect"
	"testing"
)

// TestConvertsWithoutModifying checks the first invariant: a canonical
// document comes back as it is, another as a copy, the input untouched.
func TestConvertsWithoutModifying(t *testing.T) {
	plain := map[string]any{"a": []any{"x", int64(1)}}
	got, err := Document(plain)
	if err != nil || reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(plain).UnsafePointer() {
		t.Fatalf("a canonical document: got %v, %v; want it back as it is", got, err)
	}
	type phase string
	in := map[string]any{"labels": map[string]string{"a": "b"}, "n": int32(3), "p": phase("up"), "keep": plain}
	got, err = Document(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"labels": map[string]any{"a": "b"}, "n": int64(3), "p": "up", "keep": plain}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	if _, ok := in["labels"].(map[string]string); !ok || in["n"] != int32(3) {
		t.Errorf("the input was modified: %#v", in)
	}
}

// TestErrorsNameTheFirstInKeyOrder checks that of several bad values the
// error names the first in key order, every time.
func TestErrorsNameTheFirstInKeyOrder(t *testing.T) {
	in := map[string]any{}
	for _, k := range []string{"d", "b", "c", "e"} {
		in[k] = struct{}{}
	}
	for range 20 {
		_, err := Document(in)
		var e *Error
		if !errors.As(err, &e) || len(e.Path) != 1 || e.Path[0].Key != "b" {
			t.Fatalf("got %v, want an error at b", err)
		}
	}
}

// TestTooDeep checks that a value that contains itself is an error.
func TestTooDeep(t *testing.T) {
	loop := map[string]any{}
	loop["a"] = []any{loop}
	var e *Error
	if _, err := Document(map[string]any{"x": loop, "y": int8(1)}); !errors.As(err, &e) || len(e.Path) != ShownPrefix {
		t.Errorf("got %v, want an error naming %d segments", err, ShownPrefix)
	}
}
