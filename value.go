package opbus

import (
	"errors"
	"fmt"
	"strings"

	"github.com/opbus/opbus/internal/jsonvalue"
)

// asNumber reports v as a number if it is one of the numeric types that
// decoders produce; see [jsonvalue.AsNumber].
func asNumber(v any) (jsonvalue.Number, bool) { return jsonvalue.AsNumber(v) }

// Equal reports whether two JSON-like values are equal, comparing numbers by
// value across int, int64, uint64, float64 and json.Number; integers compare
// exactly at any size. It allocates nothing for numbers in the int64 range.
// Values nested deeper than 1000 levels (one that contains itself, which is
// not JSON-like) are unequal.
func Equal(a, b any) bool { return jsonvalue.Equal(a, b) }

// admitDocument returns obj as it enters a bus that diffs with c as an
// object's state: a non-nil map holding only JSON-like values, nested at
// most [jsonvalue.MaxNesting] levels deep, in canonical form (see
// canonicalDocument: obj itself when it holds only what decoders produce).
// What c ignores (per-write noise such as managedFields, often the largest
// part of a Kubernetes object) is never read, so the common walk skips it.
func (c *Comparer) admitDocument(obj map[string]any) (map[string]any, error) {
	if obj == nil {
		return nil, errors.New("opbus: document is nil: expected a map[string]any, empty for an object with no fields")
	}
	if c.m.Plain(obj, c.m.All(), 0, "") {
		return obj, nil
	}
	return canonicalDocument(obj)
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
