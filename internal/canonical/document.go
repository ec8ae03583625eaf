package canonical

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// Document returns obj in the bus's canonical form, for a document that
// the door's quick check (jsonvalue.Plain) did not pass: obj itself
// when it needs no conversion after all (an invalid value is then an
// error), else a copy in which every converted value, and every map and
// list that holds one, is new; what is unchanged is shared with obj, which
// is never modified.
func Document(obj map[string]any) (map[string]any, error) {
	// Room for the path of a deep document, so that the walk does not
	// allocate one per value; errors copy it.
	at := make([]pathsyntax.Segment, 0, 32)
	v, _, err := (&canonicalizer{}).value(obj, at)
	if err != nil {
		// Walk again in key order, so that of several bad values the
		// error names the same one every time.
		_, _, err = (&canonicalizer{sorted: true}).value(obj, at)
		return nil, err
	}
	return v.(map[string]any), nil
}

// canonicalizer walks a value to put it in canonical form.
type canonicalizer struct {
	sorted bool // visit map keys in order (for a deterministic error)
}

// value returns v in canonical form, and whether that is a new value. at
// is where v is, for errors.
func (c *canonicalizer) value(v any, at []pathsyntax.Segment) (any, bool, error) {
	if len(at) > jsonvalue.MaxNesting {
		return nil, false, tooDeep(at)
	}
	switch x := v.(type) {
	case nil, bool, string:
		return v, false, nil
	case map[string]any:
		return c.mapValue(x, at)
	case []any:
		return c.listValue(x, at)
	}
	switch x := v.(type) {
	case int, int64, float64, json.Number:
		return v, false, Validate(v, at) // finite, and a valid json.Number
	case uint64:
		if x > math.MaxInt64 {
			return v, false, nil
		}
	case map[string]string: // labels and annotations: without reflection
		if x == nil {
			return nil, true, nil // null, as encoding/json writes it
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out, true, nil
	case []string:
		if x == nil {
			return nil, true, nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, true, nil
	}
	cv, err := c.converted(reflect.ValueOf(v), at)
	return cv, true, err
}

// mapValue is value for a map: x itself unless a value in it was
// converted, then a copy.
func (c *canonicalizer) mapValue(x map[string]any, at []pathsyntax.Segment) (any, bool, error) {
	if c.sorted {
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if _, _, err := c.value(x[k], append(at, key(k))); err != nil {
				return nil, false, err
			}
		}
		return x, false, nil
	}
	var out map[string]any
	for k, e := range x {
		ce, changed, err := c.value(e, append(at, key(k)))
		if err != nil {
			return nil, false, err
		}
		if changed {
			if out == nil {
				out = maps.Clone(x)
			}
			out[k] = ce
		}
	}
	if out == nil {
		return x, false, nil
	}
	return out, true, nil
}

// listValue is value for a list: x itself unless a value in it was
// converted, then a copy.
func (c *canonicalizer) listValue(x []any, at []pathsyntax.Segment) (any, bool, error) {
	var out []any
	for i, e := range x {
		ce, changed, err := c.value(e, append(at, index(i)))
		if err != nil {
			return nil, false, err
		}
		if changed {
			if out == nil {
				out = slices.Clone(x)
			}
			out[i] = ce
		}
	}
	if out == nil {
		return x, false, nil
	}
	return out, true, nil
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// converted returns the canonical form of a value of a Go type that the
// decoders do not produce, or an error naming its path and type.
func (c *canonicalizer) converted(rv reflect.Value, at []pathsyntax.Segment) (any, error) {
	if len(at) > jsonvalue.MaxNesting {
		return nil, tooDeep(at)
	}
	t := rv.Type()
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return nil, unsupported(rv, at, "it has its own JSON encoding: convert it with opbus.Document")
	}
	switch t.Kind() {
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u), nil
		}
		return rv.Uint(), nil
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, &Error{Path: pathsyntax.Clone(at), Value: rv.Interface(), Reason: "not a finite number: JSON has no NaN or infinity"}
		}
		if t.Kind() == reflect.Float32 {
			// The float64 that its JSON form reads as: float32(0.1) is
			// 0.1, not 0.10000000149011612.
			f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
		}
		return f, nil
	case reflect.Map:
		return c.convertedMap(rv, at)
	case reflect.Slice, reflect.Array:
		return c.convertedList(rv, at)
	case reflect.Pointer:
		// What it points to, through any number of pointers but not
		// forever: a pointer type can point to itself.
		e := rv
		for n := 0; e.Kind() == reflect.Pointer; n++ {
			if e.IsNil() {
				return nil, nil
			}
			if n == jsonvalue.MaxNesting {
				return nil, unsupported(rv, at, "a pointer that points to itself")
			}
			e = e.Elem()
		}
		if e.Kind() == reflect.Struct {
			return nil, unsupported(rv, at, "a struct's JSON form follows its field tags: convert it with opbus.Document")
		}
		v, _, err := c.value(e.Interface(), at)
		return v, err
	case reflect.Struct:
		return nil, unsupported(rv, at, "a struct's JSON form follows its field tags: convert it with opbus.Document")
	}
	return nil, unsupported(rv, at, "expected a JSON-like value: a map with string keys, a slice, a string, a bool, a number or nil")
}

// convertedMap is converted for a map.
func (c *canonicalizer) convertedMap(rv reflect.Value, at []pathsyntax.Segment) (any, error) {
	if rv.Type().Key().Kind() != reflect.String {
		return nil, unsupported(rv, at, "a map's keys must be strings")
	}
	if rv.IsNil() {
		return nil, nil
	}
	keys := rv.MapKeys()
	if c.sorted {
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	}
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		e, _, err := c.value(rv.MapIndex(k).Interface(), append(at, key(k.String())))
		if err != nil {
			return nil, err
		}
		out[k.String()] = e
	}
	return out, nil
}

// convertedList is converted for a slice or an array.
func (c *canonicalizer) convertedList(rv reflect.Value, at []pathsyntax.Segment) (any, error) {
	t := rv.Type()
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		return nil, unsupported(rv, at, "encoding/json writes bytes in base64: convert them to a string")
	}
	if t.Kind() == reflect.Slice && rv.IsNil() {
		return nil, nil
	}
	out := make([]any, rv.Len())
	for i := range out {
		e, _, err := c.value(rv.Index(i).Interface(), append(at, index(i)))
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func unsupported(rv reflect.Value, at []pathsyntax.Segment, why string) error {
	name := rv.Type().String()
	if rv.Type() == reflect.TypeFor[[]byte]() {
		name = "[]byte" // not []uint8, as reflect names it
	}
	return &Error{Path: pathsyntax.Clone(at), Value: rv.Interface(), Reason: fmt.Sprintf("unsupported type %s: %s", name, why)}
}
