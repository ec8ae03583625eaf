package jsonvalue

import (
	"math"
	"reflect"
)

// MaxNesting bounds how deep a value may nest. Real documents are a few
// dozen levels deep; the bound turns a value that contains itself, which
// would overflow the stack of every recursive walk, into an answer.
const MaxNesting = 1000

// Kind classifies a JSON-like value for comparison.
type Kind uint8

// The kinds of value.
const (
	KindNull Kind = iota
	KindBool
	KindString
	KindNumber
	KindMap
	KindList
	KindOther // not JSON-like
)

// KindOf returns the kind of v.
func KindOf(v any) Kind {
	switch v.(type) {
	case nil:
		return KindNull
	case bool:
		return KindBool
	case string:
		return KindString
	case map[string]any:
		return KindMap
	case []any:
		return KindList
	}
	if _, ok := AsNumber(v); ok {
		return KindNumber
	}
	return KindOther
}

// Equal is EqualAt for values at the root.
func Equal(a, b any) bool { return EqualAt(a, b, false, 0) }

// EqualAt reports whether a and b, values at depth, are equal, numbers
// compared by value; with plainB it also requires b to hold only the
// values [Plain] accepts (for a that does: a number of another Go type
// equal to one of a's is a value admission converts). Past [MaxNesting]
// it answers false: a value there may contain itself.
func EqualAt(a, b any, plainB bool, depth int) bool {
	if depth > MaxNesting {
		return false
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok {
				return false
			}
			if xs, ok := xv.(string); ok {
				// Most leaves are strings: settled inline.
				if ys, ok := yv.(string); !ok || xs != ys {
					return false
				}
				continue
			}
			if !EqualAt(xv, yv, plainB, depth+1) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !EqualAt(x[i], y[i], plainB, depth+1) {
				return false
			}
		}
		return true
	}
	if SameScalar(a, b) {
		return true // of one of Plain's types, as a
	}
	return scalarEqual(a, b) && (!plainB || Plain(b, 0))
}

func scalarEqual(a, b any) bool {
	an, aok := AsNumber(a)
	bn, bok := AsNumber(b)
	if aok || bok {
		return aok && bok && an.Equal(bn)
	}
	if KindOf(a) != KindOther || KindOf(b) != KindOther {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// SameScalar reports whether a and b are equal strings, bools, float64s,
// int64s or nils: a cheap test that settles most map entries and list
// elements before any path bookkeeping. False means "not settled here".
func SameScalar(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

// Plain reports, without allocating, whether v, at depth, holds only the
// values that decoders produce (nil, bools, strings, int64, int, finite
// float64, map[string]any and []any), nested at most [MaxNesting] levels
// deep.
func Plain(v any, depth int) bool {
	if depth > MaxNesting {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, int64, int:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		for _, e := range x {
			if _, ok := e.(string); ok {
				continue // most leaves: settled inline, without a call
			}
			if !Plain(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if _, ok := e.(string); ok {
				continue
			}
			if !Plain(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
