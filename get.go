package opbus

import (
	"fmt"
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
	p, err := ParsePath(path)
	if err != nil {
		return out, err
	}
	v, err := lookupField(doc, p)
	if err != nil {
		return out, err
	}
	if err := decodeValue(v, p, &out); err != nil {
		var zero T // not what a failed decoding left half done
		return zero, err
	}
	return out, nil
}

// lookupField returns the value at p in doc, or an error saying where the
// way to it ends: an absent field (ErrAbsent) or a value that is not the
// map or list p goes through.
func lookupField(doc map[string]any, p Path) (any, error) {
	var v any = doc
	for i, s := range p {
		if s.Kind == SegAny {
			return nil, fmt.Errorf("opbus: field path %s: [*] stands for any number of values and Get reads one: name an element by index or key, or visit them all with Resolve", p)
		}
		if v == nil {
			return nil, &absentError{path: p, why: fmt.Sprintf("%s is null", describePath(p[:i]))}
		}
		e, ok := step(v, s)
		if ok {
			v = e
			continue
		}
		switch s.Kind {
		case SegKey:
			if _, isMap := v.(map[string]any); !isMap {
				return nil, &ValueError{Path: clonePath(p[:i]), Value: v,
					Reason: fmt.Sprintf("got %s, want a map to look up %q in (reading %s)", describe(v), s.Key, p)}
			}
			return nil, &absentError{path: p, why: fmt.Sprintf("%s has no key %q", describePath(p[:i]), s.Key)}
		default:
			l, isList := v.([]any)
			if !isList {
				return nil, &ValueError{Path: clonePath(p[:i]), Value: v,
					Reason: fmt.Sprintf("got %s, want a list to find %s in (reading %s)", describe(v), s, p)}
			}
			if s.Kind == SegIndex {
				return nil, &absentError{path: p, why: fmt.Sprintf("%s has %d elements", describePath(p[:i]), len(l))}
			}
			return nil, &absentError{path: p, why: fmt.Sprintf("%s has no element with %s=%s", describePath(p[:i]), s.Key, s.Value)}
		}
	}
	if v == nil {
		return nil, &absentError{path: p, why: "it is null"}
	}
	return v, nil
}

// describePath names p in an error: the path, or "the document" for the
// root.
func describePath(p Path) string {
	if len(p) == 0 {
		return "the document"
	}
	return p.String()
}

// absentError reports a field that is missing or null.
type absentError struct {
	path Path
	why  string
}

func (e *absentError) Error() string {
	return fmt.Sprintf("opbus: field %s is absent: %s", e.path, e.why)
}

func (e *absentError) Unwrap() error { return ErrAbsent }
