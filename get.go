package opbus

import (
	"fmt"

	"github.com/opbus/opbus/internal/decode"
)

// Get returns the value at path in doc as a T, or an error that names the
// path and, for a value of another type, both types. It reads what
// handlers otherwise dig out of maps with type assertions, without their
// panics and silent misses:
//
//	version, err := opbus.Get[string](ev.New, "spec.version")
//	replicas, err := opbus.Get[int](ev.New, "spec.replicas")
//	image, err := opbus.Get[string](ev.New, "spec.containers[name=app].image")
//	labels, err := opbus.Get[map[string]string](ev.New, "metadata.labels")
//	spec, err := opbus.Get[WebAppSpec](ev.New, "spec")
//
// path is written as for [ParsePath], and may hold list elements by index
// ([0]) or by key ([name=app], the first element whose field has that
// value); a wildcard ([*]) is an error, since it stands for any number of
// values (see [Resolve]).
//
// A field that is missing, or null, is absent: the error wraps
// [ErrAbsent]. A value is converted to T as [Decode] converts it: a number
// of any Go type into any integer type when it is a whole number in that
// type's range (float64 3 is an int; 3.5 is an error), into any float
// type; strings and bools as they are, also into named string and bool
// types; map[string]any, []any and any as they are; every other T (a
// struct, a map[string]string, a []string, a pointer) through its JSON
// form, as encoding/json decodes it. A map[string]any, []any or any that
// Get returns is part of doc, not a copy: like the rest of an event's
// document, it must not be modified.
func Get[T any](doc map[string]any, path string) (T, error) {
	var out T
	p, err := parseSegments(path)
	if err != nil {
		return out, err
	}
	v, err := decode.Lookup(doc, p)
	if e, ok := err.(*decode.Absent); ok {
		return out, &absentError{path: decode.Text(p), why: e.Why}
	}
	if err != nil {
		return out, valueError(err)
	}
	if err := decodeValue(v, p, &out); err != nil {
		var zero T // not what a failed decoding left half done
		return zero, err
	}
	return out, nil
}

// absentError reports a field that is missing or null.
type absentError struct {
	path string
	why  string
}

func (e *absentError) Error() string {
	return fmt.Sprintf("opbus: field %s is absent: %s", e.path, e.why)
}

func (e *absentError) Unwrap() error { return ErrAbsent }
