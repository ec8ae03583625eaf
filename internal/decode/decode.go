// Package decode stores JSON-like values (see internal/jsonvalue) in Go
// values of any type, as opbus.Decode and opbus.Get do: numbers, strings,
// bools and any directly, with range and whole-number checks, every other
// type through the value's JSON form, as encoding/json decodes it. It also
// finds the value Get reads at a path ([Lookup], [Step]).
//
// Invariants:
//   - A value that does not fit is an *[Error] naming its path relative to
//     the value decoded, the type it has and the type it should have had;
//     a string's content is never named (it may be a secret).
//   - What is stored as a map[string]any, []any or any is part of the
//     value, not a copy; the value is never modified.
//   - A lookup that does not find its value says where the way ends: an
//     *[Absent] for what is missing or null, an *[Error] at a value that is
//     not the map or list the path goes through.
//   - A failed conversion leaves the target as encoding/json leaves it:
//     callers that promise a zero value on error reset it themselves.
package decode

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
	"github.com/opbus/opbus/internal/pathsyntax"
)

// Error reports a value that does not fit the type it is decoded into, at
// Path (relative to the value decoded; nil for that value itself).
type Error = pathsyntax.ValueError

func key(k string) pathsyntax.Segment { return pathsyntax.Segment{Kind: pathsyntax.Key, Key: k} }

func index(i int) pathsyntax.Segment { return pathsyntax.Segment{Kind: pathsyntax.Index, Index: i} }

// lookup returns the value at p, a path of keys and indexes, in v.
func lookup(v any, p []pathsyntax.Segment) (any, bool) {
	for _, s := range p {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[s.Key]
			if !ok || s.Kind != pathsyntax.Key {
				return nil, false
			}
			v = e
		case []any:
			if s.Kind != pathsyntax.Index || s.Index >= len(x) {
				return nil, false
			}
			v = x[s.Index]
		default:
			return nil, false
		}
	}
	return v, true
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Into stores the JSON-like value v in *out (out is a non-nil pointer):
// numbers, strings, bools and any are converted directly, every other
// type through v's JSON form. A value that does not fit is an *[Error].
func Into(v any, out any) error {
	return decodeValue(v, nil, out)
}

// decodeValue stores v in *out (out is a non-nil pointer); at is where v
// is, for errors.
func decodeValue(v any, at []pathsyntax.Segment, out any) error {
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
func decodeKind(v any, at []pathsyntax.Segment, out any) error {
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
func decodeUint(v any, at []pathsyntax.Segment, rv reflect.Value) error {
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
func decodeJSON(v any, at []pathsyntax.Segment, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return &Error{Path: pathsyntax.Clone(at), Value: v, Reason: fmt.Sprintf("no JSON form: %v", err)}
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
					rel = append(rel, key(f))
				}
			}
		}
		where := append(pathsyntax.Clone(at), rel...)
		if got, ok := lookup(v, rel); ok {
			return mismatch(got, where, te.Type.String(), "")
		}
		return &Error{Path: where, Reason: fmt.Sprintf("got %s, want %s", te.Value, te.Type)}
	}
	return &Error{Path: pathsyntax.Clone(at), Value: v, Reason: fmt.Sprintf("cannot decode into %s: %s", want, strings.TrimPrefix(err.Error(), "json: "))}
}

// pathAtOffset returns the path of the value in the JSON text data that
// ends at offset, or whose opening bracket does, as encoding/json reports
// a value it cannot decode.
func pathAtOffset(data []byte, offset int64) ([]pathsyntax.Segment, bool) {
	type frame struct {
		object bool
		key    string
		index  int
		atKey  bool // the next token of an object is a key
	}
	var stack []frame
	path := func() []pathsyntax.Segment {
		p := make([]pathsyntax.Segment, 0, len(stack))
		for _, f := range stack {
			if f.object {
				p = append(p, key(f.key))
			} else {
				p = append(p, index(f.index))
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
func mismatch(v any, at []pathsyntax.Segment, want, why string) error {
	reason := fmt.Sprintf("got %s, want %s", Describe(v), want)
	if why != "" {
		reason += ": " + why
	}
	return &Error{Path: pathsyntax.Clone(at), Value: v, Reason: reason}
}

// Describe names the Go type of v, with its value when it is a number or a
// bool. A string's value is left out: it may be a secret.
func Describe(v any) string {
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
