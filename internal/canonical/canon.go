// Package canonical puts JSON-like documents in the bus's canonical form: the
// form decoders produce (map[string]any, []any, string, bool, nil and
// numbers as int, int64, float64 or json.Number), converting the plain Go
// values whose JSON form is evident (a map[string]string, a []string, a
// named string type, an int32) and rejecting the rest with an [Error]
// that names the path of the value.
//
// Invariants:
//   - A document already in canonical form is returned as it is, not
//     copied; otherwise every converted value, and every map and list that
//     holds one, is new, and what is unchanged is shared. The input is
//     never modified.
//   - Of several bad values, the error names the same one every time (the
//     first in key order).
//   - A value nested deeper than [jsonvalue.MaxNesting] levels, such as one
//     that contains itself, is an error, not a stack overflow.
package canonical

import (
	"encoding/json"
	"fmt"

	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// ShownPrefix is how many segments of a too-deep path an [Error] names.
const ShownPrefix = 8

// Error reports a value that is not JSON-like, or not convertible to the
// canonical form, at Path (nil for the root; the first [ShownPrefix]
// segments of a path that is too deep). Value is the value, nil for a
// value nested too deep.
type Error = pathsyntax.ValueError

// tooDeep reports a value nested deeper than MaxNesting at at.
func tooDeep(at []pathsyntax.Segment) *Error {
	return &Error{Path: pathsyntax.Clone(at[:ShownPrefix]),
		Reason: fmt.Sprintf("nested deeper than %d levels (a value that contains itself?)", jsonvalue.MaxNesting)}
}

func key(k string) pathsyntax.Segment { return pathsyntax.Segment{Kind: pathsyntax.Key, Key: k} }

func index(i int) pathsyntax.Segment { return pathsyntax.Segment{Kind: pathsyntax.Index, Index: i} }

// Validate reports, as an *[Error], the first value of v (at the path at)
// that is not canonical: not a map with string keys, a []any, a string, a
// bool, nil or a finite number.
func Validate(v any, at []pathsyntax.Segment) error {
	if len(at) > jsonvalue.MaxNesting {
		// Value is left nil: printing a value that contains itself would
		// not end.
		return tooDeep(at)
	}
	switch x := v.(type) {
	case nil, bool, string:
		return nil
	case map[string]any:
		for k, e := range x {
			if err := Validate(e, append(at, key(k))); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for i, e := range x {
			if err := Validate(e, append(at, index(i))); err != nil {
				return err
			}
		}
		return nil
	}
	n, ok := jsonvalue.AsNumber(v)
	if !ok {
		if _, isNum := v.(json.Number); isNum {
			return &Error{Path: pathsyntax.Clone(at), Value: v, Reason: "not a valid JSON number"}
		}
		return &Error{Path: pathsyntax.Clone(at), Value: v, Reason: fmt.Sprintf("unsupported type %T: expected map[string]any, []any, string, bool, nil or a number", v)}
	}
	if !n.Finite() {
		return &Error{Path: pathsyntax.Clone(at), Value: v, Reason: "not a finite number: JSON has no NaN or infinity"}
	}
	return nil
}
