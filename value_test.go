package opbus

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func nanValue() float64 { return math.NaN() }

func TestValidate(t *testing.T) {
	ok := []any{nil, true, "s", 1, int64(2), 3.5, json.Number("4"), map[string]any{"a": []any{1, "x", nil}}}
	for _, v := range ok {
		if err := Validate(v); err != nil {
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
		err := Validate(tt.v)
		var ve *ValueError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%#v) = %v, want %q", tt.v, err, tt.want)
		}
	}
}
