// Package jsonvalue holds the arithmetic of JSON-like values: the Go
// values that decoders produce for a JSON document (map[string]any, []any,
// string, bool, nil and numbers of several Go types), compared by value.
//
// Invariants:
//   - Numbers compare by value across Go types: 3, int64(3), 3.0 and
//     json.Number("3") are one value; integers compare exactly at any size
//     (past the int64 range by their decimal digits), other numbers as
//     float64.
//   - Nothing here modifies the values it is given, except [PlainNumbers],
//     which says so.
//   - Every recursive walk stops at [MaxNesting] levels, so that a value
//     that contains itself ends the walk instead of the stack.
//   - Nothing allocates for values of the types decoders produce in the
//     int64 range.
package jsonvalue

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
)

// Number is a JSON number in a form that compares by value: integers
// compare exactly at any size (those past the int64 range, such as a large
// uint64 or a long json.Number, by their decimal digits), other numbers as
// float64.
type Number struct {
	I     int64   // the integer, when IsInt
	F     float64 // the value, when neither IsInt nor Big
	Big   string  // an integer past the int64 range, in decimal; I and F unset
	IsInt bool    // an integer in the int64 range, in I
}

// AsNumber reports v as a number if it is one of the numeric types that
// decoders produce (encoding/json gives float64 or json.Number, client-go's
// unstructured objects hold int64, hand-written documents hold int).
func AsNumber(v any) (Number, bool) {
	switch n := v.(type) {
	case float64:
		return floatNumber(n), true
	case int64:
		return Number{I: n, IsInt: true}, true
	case int:
		return Number{I: int64(n), IsInt: true}, true
	case json.Number:
		return parseNumber(string(n))
	case int32:
		return Number{I: int64(n), IsInt: true}, true
	case int16:
		return Number{I: int64(n), IsInt: true}, true
	case int8:
		return Number{I: int64(n), IsInt: true}, true
	case uint:
		return uintNumber(uint64(n)), true
	case uint64:
		return uintNumber(n), true
	case uint32:
		return Number{I: int64(n), IsInt: true}, true
	case uint16:
		return Number{I: int64(n), IsInt: true}, true
	case uint8:
		return Number{I: int64(n), IsInt: true}, true
	case float32:
		return floatNumber(float64(n)), true
	}
	return Number{}, false
}

// parseNumber reads the text of a json.Number: an integer literal exactly,
// whatever its size, anything else as a float64.
func parseNumber(s string) (Number, bool) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return Number{I: i, IsInt: true}, true
	}
	if digits, ok := BigInteger(s); ok && errors.Is(err, strconv.ErrRange) {
		return Number{Big: digits}, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Number{}, false
	}
	return floatNumber(f), true
}

// BigInteger returns the decimal integer literal s without leading zeros,
// and whether s is one.
func BigInteger(s string) (string, bool) {
	sign, digits := "", s
	if strings.HasPrefix(digits, "-") {
		sign, digits = "-", digits[1:]
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	if digits = strings.TrimLeft(digits, "0"); digits == "" {
		return "0", true
	}
	return sign + digits, true
}

func uintNumber(u uint64) Number {
	if u <= math.MaxInt64 {
		return Number{I: int64(u), IsInt: true}
	}
	return Number{Big: strconv.FormatUint(u, 10)}
}

// floatNumber keeps integral floats as integers, so that 3.0 and int64(3)
// are one value, and 1e19 and uint64(1e19) another: those past the int64
// range by their exact value (every float64 that large is integral).
func floatNumber(f float64) Number {
	if f >= -(1<<63) && f < 1<<63 {
		if f == math.Trunc(f) {
			return Number{I: int64(f), IsInt: true}
		}
		return Number{F: f}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return Number{F: f}
	}
	return Number{Big: strconv.FormatFloat(f, 'f', 0, 64)}
}

// Equal reports whether a and b are the same number.
func (a Number) Equal(b Number) bool {
	if a.IsInt && b.IsInt {
		return a.I == b.I
	}
	if a.Big != "" || b.Big != "" {
		return a.Big == b.Big // an integer past int64 equals only itself
	}
	if a.IsInt || b.IsInt {
		return false // an integral value never equals a non-integral one
	}
	return a.F == b.F
}

// Float returns a as the nearest float64.
func (a Number) Float() float64 {
	switch {
	case a.IsInt:
		return float64(a.I)
	case a.Big != "":
		f, _ := strconv.ParseFloat(a.Big, 64) // ±Inf past float64's range
		return f
	}
	return a.F
}

// Text returns a in decimal, as a keyed list's key: integers exactly,
// other numbers in their shortest form.
func (a Number) Text() string {
	switch {
	case a.IsInt:
		return strconv.FormatInt(a.I, 10)
	case a.Big != "":
		return a.Big
	}
	return strconv.FormatFloat(a.F, 'g', -1, 64)
}

// Finite reports whether a is neither NaN nor an infinity.
func (a Number) Finite() bool { return !math.IsNaN(a.F) && !math.IsInf(a.F, 0) }

// PlainNumbers replaces, in place, each json.Number in v with an int64 when
// it is an integer that fits (a uint64 past the int64 range; a longer
// integer stays a json.Number), else a float64 when it fits one. It
// returns v, or the number that replaces it.
func PlainNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = PlainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = PlainNumbers(e)
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u
		}
		if _, ok := BigInteger(string(x)); ok {
			return x // an integer past uint64: exact, as float64 would not be
		}
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return f
		}
	}
	return v
}
