package opbus

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// number is a JSON number in a form that compares by value: integers
// compare exactly at any size (those past the int64 range, such as a large
// uint64 or a long json.Number, by their decimal digits), other numbers as
// float64.
type number struct {
	i     int64
	f     float64
	big   string // an integer past the int64 range, in decimal; i and f unset
	isInt bool   // an integer in the int64 range, in i
}

// asNumber reports v as a number if it is one of the numeric types that
// decoders produce (encoding/json gives float64 or json.Number, client-go's
// unstructured objects hold int64, hand-written documents hold int).
func asNumber(v any) (number, bool) {
	switch n := v.(type) {
	case float64:
		return floatNumber(n), true
	case int64:
		return number{i: n, isInt: true}, true
	case int:
		return number{i: int64(n), isInt: true}, true
	case json.Number:
		return parseNumber(string(n))
	case int32:
		return number{i: int64(n), isInt: true}, true
	case int16:
		return number{i: int64(n), isInt: true}, true
	case int8:
		return number{i: int64(n), isInt: true}, true
	case uint:
		return uintNumber(uint64(n)), true
	case uint64:
		return uintNumber(n), true
	case uint32:
		return number{i: int64(n), isInt: true}, true
	case uint16:
		return number{i: int64(n), isInt: true}, true
	case uint8:
		return number{i: int64(n), isInt: true}, true
	case float32:
		return floatNumber(float64(n)), true
	}
	return number{}, false
}

// parseNumber reads the text of a json.Number: an integer literal exactly,
// whatever its size, anything else as a float64.
func parseNumber(s string) (number, bool) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return number{i: i, isInt: true}, true
	}
	if digits, ok := bigInteger(s); ok && errors.Is(err, strconv.ErrRange) {
		return number{big: digits}, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return number{}, false
	}
	return floatNumber(f), true
}

// bigInteger returns the decimal integer literal s without leading zeros,
// and whether s is one.
func bigInteger(s string) (string, bool) {
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

func uintNumber(u uint64) number {
	if u <= math.MaxInt64 {
		return number{i: int64(u), isInt: true}
	}
	return number{big: strconv.FormatUint(u, 10)}
}

// floatNumber keeps integral floats as integers, so that 3.0 and int64(3)
// are one value, and 1e19 and uint64(1e19) another: those past the int64
// range by their exact value (every float64 that large is integral).
func floatNumber(f float64) number {
	if f >= -(1<<63) && f < 1<<63 {
		if f == math.Trunc(f) {
			return number{i: int64(f), isInt: true}
		}
		return number{f: f}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return number{f: f}
	}
	return number{big: strconv.FormatFloat(f, 'f', 0, 64)}
}

func (a number) equal(b number) bool {
	if a.isInt && b.isInt {
		return a.i == b.i
	}
	if a.big != "" || b.big != "" {
		return a.big == b.big // an integer past int64 equals only itself
	}
	if a.isInt || b.isInt {
		return false // an integral value never equals a non-integral one
	}
	return a.f == b.f
}

// float returns a as the nearest float64.
func (a number) float() float64 {
	switch {
	case a.isInt:
		return float64(a.i)
	case a.big != "":
		f, _ := strconv.ParseFloat(a.big, 64) // ±Inf past float64's range
		return f
	}
	return a.f
}

// text returns a in decimal, as a keyed list's key: integers exactly,
// other numbers in their shortest form.
func (a number) text() string {
	switch {
	case a.isInt:
		return strconv.FormatInt(a.i, 10)
	case a.big != "":
		return a.big
	}
	return strconv.FormatFloat(a.f, 'g', -1, 64)
}

// kind classifies a JSON-like value for comparison.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindString
	kindNumber
	kindMap
	kindList
	kindOther
)

func kindOf(v any) kind {
	switch v.(type) {
	case nil:
		return kindNull
	case bool:
		return kindBool
	case string:
		return kindString
	case map[string]any:
		return kindMap
	case []any:
		return kindList
	}
	if _, ok := asNumber(v); ok {
		return kindNumber
	}
	return kindOther
}

// Equal reports whether two JSON-like values are equal, comparing numbers by
// value across int, int64, uint64, float64 and json.Number; integers compare
// exactly at any size. It allocates nothing for numbers in the int64 range.
// Values nested deeper than 1000 levels (one that contains itself, which is
// not JSON-like) are unequal.
func Equal(a, b any) bool { return equalValues(a, b, false, 0) }

// equalValues is Equal for values at depth; with plainB it also requires
// b to hold only the values plain accepts (for a that does: a number of
// another Go type equal to one of a's is a value admission converts).
// Past maxNesting it answers false: the door does not bound the depth of
// what it ignores, and a value there may contain itself.
func equalValues(a, b any, plainB bool, depth int) bool {
	if depth > maxNesting {
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
			if !equalValues(xv, yv, plainB, depth+1) {
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
			if !equalValues(x[i], y[i], plainB, depth+1) {
				return false
			}
		}
		return true
	}
	if sameScalar(a, b) {
		return true // of one of plain's types, as a
	}
	return scalarEqual(a, b) && (!plainB || plain(b, 0))
}

func scalarEqual(a, b any) bool {
	an, aok := asNumber(a)
	bn, bok := asNumber(b)
	if aok || bok {
		return aok && bok && an.equal(bn)
	}
	if kindOf(a) != kindOther || kindOf(b) != kindOther {
		return false
	}
	return reflect.DeepEqual(a, b)
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
const maxNesting = 1000

// shownPrefix is how many segments of a too-deep path an error names.
const shownPrefix = 8

// admitDocument returns obj as it enters the bus as an object's state: a
// non-nil map holding only JSON-like values, nested at most maxNesting
// levels deep, in canonical form (see canonicalDocument: obj itself when
// it holds only what decoders produce).
func admitDocument(obj map[string]any) (map[string]any, error) {
	return defaultComparer.admitDocument(obj)
}

// admitDocument is admitDocument for a bus that diffs with c: what c
// ignores (per-write noise such as managedFields, often the largest part
// of a Kubernetes object) is never read, so the common walk skips it.
func (c *Comparer) admitDocument(obj map[string]any) (map[string]any, error) {
	if obj == nil {
		return nil, errors.New("opbus: document is nil: expected a map[string]any, empty for an object with no fields")
	}
	if c.plain(obj, c.all, 0, "") {
		return obj, nil
	}
	return canonicalDocument(obj)
}

// plain is the package's plain that skips the paths c ignores.
func (c *Comparer) plain(v any, mask uint64, depth int, listKey string) bool {
	if mask&c.ignores == 0 {
		return plain(v, depth)
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			next, ignored, field := c.step(mask, depth, MapKey(k))
			if !ignored && !c.plain(e, next, depth+1, field) {
				return false
			}
		}
		return true
	case []any:
		for i, e := range x {
			next, ignored, field := c.step(mask, depth, elementSegment(e, i, listKey))
			if !ignored && !c.plain(e, next, depth+1, field) {
				return false
			}
		}
		return true
	}
	return plain(v, depth)
}

// plain reports, without allocating, whether v holds only the values that
// decoders produce, nested at most maxNesting levels deep: the common case
// at the door, which then costs one walk. Anything else takes validate's
// slower walk, which names what it finds.
func plain(v any, depth int) bool {
	if depth > maxNesting {
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
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if _, ok := e.(string); ok {
				continue
			}
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

func validate(v any, at Path) error {
	if len(at) > maxNesting {
		// Value is left nil: printing a value that contains itself would
		// not end.
		return &ValueError{Path: clonePath(at[:shownPrefix]),
			Reason: fmt.Sprintf("nested deeper than %d levels (a value that contains itself?)", maxNesting)}
	}
	switch x := v.(type) {
	case nil, bool, string:
		return nil
	case map[string]any:
		for k, e := range x {
			if err := validate(e, append(at, MapKey(k))); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for i, e := range x {
			if err := validate(e, append(at, ListIndex(i))); err != nil {
				return err
			}
		}
		return nil
	}
	n, ok := asNumber(v)
	if !ok {
		if _, isNum := v.(json.Number); isNum {
			return &ValueError{Path: clonePath(at), Value: v, Reason: "not a valid JSON number"}
		}
		return &ValueError{Path: clonePath(at), Value: v, Reason: fmt.Sprintf("unsupported type %T: expected map[string]any, []any, string, bool, nil or a number", v)}
	}
	if math.IsNaN(n.f) || math.IsInf(n.f, 0) {
		return &ValueError{Path: clonePath(at), Value: v, Reason: "not a finite number: JSON has no NaN or infinity"}
	}
	return nil
}

func clonePath(p Path) Path {
	if len(p) == 0 {
		return nil
	}
	return append(Path(nil), p...)
}

// within wraps err in the context of what was being done, without
// repeating the "opbus: " prefix of err's own message; errors.As and
// errors.Is see err.
func within(err error, format string, args ...any) error {
	return &contextError{msg: fmt.Sprintf(format, args...) + ": " + strings.TrimPrefix(err.Error(), "opbus: "), err: err}
}

type contextError struct {
	msg string
	err error
}

func (e *contextError) Error() string { return e.msg }
func (e *contextError) Unwrap() error { return e.err }
