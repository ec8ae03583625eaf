package opbus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/opbus/opbus/internal/decode"
	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// Document returns the JSON form of v as a document the bus takes: it is
// the one way to observe a Go struct, such as a typed Kubernetes object or
// a configuration struct, whose JSON form follows its field tags.
// encoding/json encodes v, and the result is decoded with integers as int64
// (uint64 past its range, json.Number past that, so that they stay exact)
// and other numbers as float64, as client-go decodes objects. v's JSON form
// must be an object. The door ([Bus.Observe], [Bus.Dispatch]) converts the
// plain Go values whose JSON form is evident — a map[string]string, a
// []string, a named string type — by itself; a struct, or a value with its
// own MarshalJSON, must go through Document.
func Document(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("opbus: document of %T: %w", v, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("opbus: document of %T: %w", v, err)
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("opbus: document of %T: its JSON form is %s, not an object: a document is a JSON object", v, jsonKind(out))
	}
	jsonvalue.PlainNumbers(m)
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a bool"
	}
	return "a number"
}

// Decode stores in the value out points to the JSON-like value v: a
// document, or a part of one such as ev.New["spec"]. Numbers, strings,
// bools and any are converted as [Get] converts them; every other type (a
// struct, a map[string]string, a []string, a pointer) is decoded from v's
// JSON form, as encoding/json decodes it: fields v lacks keep the values
// they had, so defaults can be set first. A nil v (an absent or null part)
// leaves out as it is. An error names the path in v of the value that does
// not fit, and its type and the type it should have had; the path is "(root)"
// for v itself. What Decode stores as a map[string]any, []any or any is
// part of v, not a copy.
func Decode(v any, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("opbus: Decode into %T: expected a non-nil pointer", out)
	}
	if v == nil {
		return nil
	}
	return decodeValue(v, nil, out)
}

// decodeValue stores v in *out (out is a non-nil pointer); at is where v
// is, for errors: see [decode.Into].
func decodeValue(v any, at []pathsyntax.Segment, out any) error {
	err := decode.Into(v, out)
	if e, ok := err.(*decode.Error); ok && len(at) > 0 {
		e.Path = append(slices.Clip(at), e.Path...)
	}
	return valueError(err)
}
