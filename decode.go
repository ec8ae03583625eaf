package opbus

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/opbus/opbus/internal/jsonvalue"
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

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodeValue stores v in *out (out is a non-nil pointer); at is where v
// is, for errors.
func decodeValue(v any, at Path, out any) error {
	switch o := out.(type) {
	case *any:
		*o = v
		return nil
	case *string:
		s, ok := v.(string)
		if !ok {
			return mismatch(v, at, "string", "")
		}
		*o = s
		return nil
	case *bool:
		b, ok := v.(bool)
		if !ok {
			return mismatch(v, at, "bool", "")
		}
		*o = b
		return nil
	case *map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return mismatch(v, at, "map[string]any", "")
		}
		*o = m
		return nil
	case *[]any:
		l, ok := v.([]any)
		if !ok {
			return mismatch(v, at, "[]any", "")
		}
		*o = l
		return nil
	}
	return decodeKind(v, at, out)
}

// decodeKind is decodeValue for an out of any other type, by its kind.
func decodeKind(v any, at Path, out any) error {
	rv := reflect.ValueOf(out).Elem()
	t := rv.Type()
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return decodeJSON(v, at, out)
	}
	switch t.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return mismatch(v, at, t.String(), "")
		}
		rv.SetString(s)
		return nil
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return mismatch(v, at, t.String(), "")
		}
		rv.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := jsonvalue.AsNumber(v)
		switch {
		case !ok:
			return mismatch(v, at, t.String(), "")
		case !n.IsInt && n.F != math.Trunc(n.F):
			return mismatch(v, at, t.String(), "not a whole number")
		case !n.IsInt || rv.OverflowInt(n.I):
			return mismatch(v, at, t.String(), "out of its range")
		}
		rv.SetInt(n.I)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return decodeUint(v, at, rv)
	case reflect.Float32, reflect.Float64:
		n, ok := jsonvalue.AsNumber(v)
		if !ok {
			return mismatch(v, at, t.String(), "")
		}
		f := n.Float()
		if math.IsInf(f, 0) || rv.OverflowFloat(f) {
			return mismatch(v, at, t.String(), "out of its range")
		}
		rv.SetFloat(f)
		return nil
	case reflect.Interface:
		if t.NumMethod() == 0 {
			rv.Set(reflect.ValueOf(&v).Elem())
			return nil
		}
	}
	return decodeJSON(v, at, out)
}

// decodeUint sets rv, of an unsigned integer kind, to v, a whole number in
// its range.
func decodeUint(v any, at Path, rv reflect.Value) error {
	t := rv.Type()
	n, ok := jsonvalue.AsNumber(v)
	if !ok {
		return mismatch(v, at, t.String(), "")
	}
	var u uint64
	switch {
	case n.IsInt && n.I >= 0:
		u = uint64(n.I)
	case n.Big != "":
		var err error
		if u, err = strconv.ParseUint(n.Big, 10, 64); err != nil {
			return mismatch(v, at, t.String(), "out of its range")
		}
	case !n.IsInt && n.F != math.Trunc(n.F):
		return mismatch(v, at, t.String(), "not a whole number")
	default:
		return mismatch(v, at, t.String(), "out of its range")
	}
	if rv.OverflowUint(u) {
		return mismatch(v, at, t.String(), "out of its range")
	}
	rv.SetUint(u)
	return nil
}

// decodeJSON decodes v into out through v's JSON form, and names in an
// error the path of the value that does not fit.
func decodeJSON(v any, at Path, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return &ValueError{Path: clonePath(at), Value: v, Reason: fmt.Sprintf("no JSON form: %v", err)}
	}
	err = json.Unmarshal(data, out)
	if err == nil {
		return nil
	}
	want := reflect.TypeOf(out).Elem().String()
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		rel, ok := pathAtOffset(data, te.Offset)
		if !ok {
			rel = nil
			for f := range strings.SplitSeq(te.Field, ".") {
				if f != "" {
					rel = append(rel, MapKey(f))
				}
			}
		}
		where := append(clonePath(at), rel...)
		if got, ok := lookup(v, rel); ok {
			return mismatch(got, where, te.Type.String(), "")
		}
		return &ValueError{Path: where, Reason: fmt.Sprintf("got %s, want %s", te.Value, te.Type)}
	}
	return &ValueError{Path: clonePath(at), Value: v, Reason: fmt.Sprintf("cannot decode into %s: %s", want, strings.TrimPrefix(err.Error(), "json: "))}
}

// pathAtOffset returns the path of the value in the JSON text data that
// ends at offset, or whose opening bracket does, as encoding/json reports
// a value it cannot decode.
func pathAtOffset(data []byte, offset int64) (Path, bool) {
	type frame struct {
		object bool
		key    string
		index  int
		atKey  bool // the next token of an object is a key
	}
	var stack []frame
	path := func() Path {
		p := make(Path, 0, len(stack))
		for _, f := range stack {
			if f.object {
				p = append(p, MapKey(f.key))
			} else {
				p = append(p, ListIndex(f.index))
			}
		}
		return p
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].atKey = true
			}
			continue
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			if top.object && top.atKey {
				top.key, top.atKey = tok.(string), false
				continue
			}
			if top.object {
				top.atKey = true
			} else {
				top.index++
			}
		}
		// tok begins or is a value, at path().
		if dec.InputOffset() >= offset {
			return path(), true
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{object: d == '{', atKey: d == '{', index: -1})
		}
	}
}

// mismatch reports a value that is not of the type wanted.
func mismatch(v any, at Path, want, why string) error {
	reason := fmt.Sprintf("got %s, want %s", describe(v), want)
	if why != "" {
		reason += ": " + why
	}
	return &ValueError{Path: clonePath(at), Value: v, Reason: reason}
}

// describe names the Go type of v, with its value when it is a number or a
// bool. A string's value is left out: it may be a secret.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("bool %t", x)
	case map[string]any:
		return "map[string]any"
	case []any:
		return "[]any"
	case string:
		return "string"
	case json.Number:
		return "json.Number " + string(x)
	}
	if _, ok := jsonvalue.AsNumber(v); ok {
		return fmt.Sprintf("%T %v", v, v)
	}
	return fmt.Sprintf("%T", v)
}
