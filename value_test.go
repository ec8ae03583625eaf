package opbus

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/opbus/opbus/internal/canonical"
	"github.com/opbus/opbus/internal/jsonvalue"
)

func nanValue() float64 { return math.NaN() }

func TestValidate(t *testing.T) {
	ok := []any{nil, true, "s", 1, int64(2), 3.5, json.Number("4"), map[string]any{"a": []any{1, "x", nil}}}
	for _, v := range ok {
		if err := validDocument(v); err != nil {
			t.Errorf("Validate(%v): %v", v, err)
		}
	}
	bad := []struct {
		v    any
		want string
	}{
		{map[string]any{"a": []any{1, make(chan int)}}, "opbus: value at a[1]: unsupported type chan int"},
		{map[string]any{"f": func() {}}, "opbus: value at f: unsupported type func()"},
		{map[string]any{"n": math.NaN()}, "opbus: value at n: not a finite number"},
		{math.Inf(1), "opbus: value at (root): not a finite number"},
		{map[string]any{"m": map[string]string{"a": "b"}}, "unsupported type map[string]string"},
		{map[string]any{"j": json.Number("x1")}, "opbus: value at j: not a valid JSON number"},
	}
	for _, tt := range bad {
		err := validDocument(tt.v)
		var ve *ValueError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%#v) = %v, want %q", tt.v, err, tt.want)
		}
	}
}

// nested returns a value n levels deep: maps and lists in turn, holding a
// string at the bottom.
func nested(n int) any {
	var v any = "bottom"
	for i := range n {
		if i%2 == 0 {
			v = map[string]any{"x": v}
		} else {
			v = []any{v}
		}
	}
	return v
}

// TestValidateDepth: a value that contains itself is an error, not a
// stack overflow; a deep but finite one is accepted.
func TestValidateDepth(t *testing.T) {
	cyclicMap := map[string]any{"a": 1}
	cyclicMap["self"] = cyclicMap
	deeperMap := map[string]any{}
	deeperMap["spec"] = map[string]any{"inner": []any{deeperMap}}
	cyclicList := []any{1, nil}
	cyclicList[1] = cyclicList
	tests := []struct {
		name string
		v    any
		want string // "" for no error
	}{
		{"map holding itself", cyclicMap, "opbus: value at self.self.self"},
		{"map holding itself deeper", deeperMap, "opbus: value at spec.inner[0].spec"},
		{"list holding itself", map[string]any{"l": cyclicList}, "opbus: value at l[1][1]"},
		{"500 levels", nested(500), ""},
		{"1000 levels", nested(1000), ""},
		{"1001 levels", nested(1001), "nested deeper than 1000 levels (a value that contains itself?)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validDocument(tc.v)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), "nested deeper than 1000 levels (a value that contains itself?)"):
				t.Errorf("got %v, want it to say how deep", err)
			}
		})
	}
}

func TestAdmitDocument(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name string
		obj  map[string]any
		want string // "" for no error
	}{
		{"nil", nil, "opbus: document is nil: expected a map[string]any, empty for an object with no fields"},
		{"empty", map[string]any{}, ""},
		{"plain", map[string]any{"spec": map[string]any{"replicas": 3}}, ""},
		{"unsupported value", map[string]any{"c": make(chan int)}, "opbus: value at c: unsupported type chan int"},
		{"contains itself", cyclic, "nested deeper than 1000 levels (a value that contains itself?)"},
		{"deep but legal", map[string]any{"d": nested(500)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admitDocument(tc.obj)
			if tc.want == "" {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// validDocument reports whether v holds only values that opbus can compare, hash
// and persist: maps with string keys, []any, strings, bools, nil and finite
// numbers. The error names the path of the first offending value. This is
// the form handlers see; [Bus.Observe] and [Bus.Dispatch] also take, and
// convert to it, the Go values whose JSON form is evident, such as a
// map[string]string or a []string (see [Document] for the others).
func validDocument(v any) error {
	return validate(v, nil)
}

// maxNesting bounds how deep a value may nest. Real documents are a few
// dozen levels deep; the bound turns a value that contains itself, which
// would overflow the stack of every recursive walk, into an error.
const maxNesting = jsonvalue.MaxNesting

// admitDocument is Comparer.admitDocument for a bus that diffs with the
// default comparer.
func admitDocument(obj map[string]any) (map[string]any, error) {
	return defaultComparer.admitDocument(obj)
}

// validate reports, as a *ValueError, the first value of v (at the path
// at) that is not in the form handlers see: see [canonical.Validate].
func validate(v any, at Path) error {
	if err := canonical.Validate(v, at.syntax()); err != nil {
		return valueError(err)
	}
	return nil
}
