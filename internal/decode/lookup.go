package decode

import (
	"fmt"
	"strings"

	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// Absent reports a field that is missing or null: Why says where the way
// to it ends.
type Absent struct {
	Why string
}

// Error formats the error as its reason.
func (e *Absent) Error() string { return e.Why }

// Lookup returns the value at the concrete path p in doc, as opbus.Get
// reads one. It fails with an *[Absent] for a field that is missing or
// null, or an element a list does not have; with an *[Error] at the value
// that is not the map or list p goes through; and with a plain error for a
// path that holds [pathsyntax.Any], which stands for any number of values.
// Each error is found where the walk stops: an absent field before a
// wildcard below it.
func Lookup(doc any, p []pathsyntax.Segment) (any, error) {
	v := doc
	for i, s := range p {
		if s.Kind == pathsyntax.Any {
			return nil, fmt.Errorf("opbus: field path %s: [*] stands for any number of values and Get reads one: name an element by index or key, or visit them all with Resolve", Text(p))
		}
		if v == nil {
			return nil, &Absent{Why: where(p[:i]) + " is null"}
		}
		if e, ok := Step(v, s); ok {
			v = e
			continue
		}
		if s.Kind == pathsyntax.Key {
			if _, isMap := v.(map[string]any); !isMap {
				return nil, &Error{Path: pathsyntax.Clone(p[:i]), Value: v,
					Reason: fmt.Sprintf("got %s, want a map to look up %q in (reading %s)", Describe(v), s.Key, Text(p))}
			}
			return nil, &Absent{Why: fmt.Sprintf("%s has no key %q", where(p[:i]), s.Key)}
		}
		l, isList := v.([]any)
		if !isList {
			return nil, &Error{Path: pathsyntax.Clone(p[:i]), Value: v,
				Reason: fmt.Sprintf("got %s, want a list to find %s in (reading %s)", Describe(v), Text(p[i:i+1]), Text(p))}
		}
		if s.Kind == pathsyntax.Index {
			return nil, &Absent{Why: fmt.Sprintf("%s has %d elements", where(p[:i]), len(l))}
		}
		return nil, &Absent{Why: fmt.Sprintf("%s has no element with %s=%s", where(p[:i]), s.Key, s.Value)}
	}
	if v == nil {
		return nil, &Absent{Why: "it is null"}
	}
	return v, nil
}

// Step returns the child of v that the concrete segment s addresses, and
// whether v has it: a [pathsyntax.Match] finds the first list element
// whose field has the value; [pathsyntax.Any] finds nothing.
func Step(v any, s pathsyntax.Segment) (any, bool) {
	switch s.Kind {
	case pathsyntax.Key:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		e, ok := m[s.Key]
		return e, ok
	case pathsyntax.Index:
		l, ok := v.([]any)
		if !ok || s.Index >= len(l) {
			return nil, false
		}
		return l[s.Index], true
	case pathsyntax.Match:
		l, ok := v.([]any)
		if !ok {
			return nil, false
		}
		for _, e := range l {
			if k, ok := jsonvalue.ElementKey(e, s.Key); ok && k == s.Value {
				return e, true
			}
		}
	}
	return nil, false
}

// Text returns the path p as text, as opbus.Path's String writes it.
func Text(p []pathsyntax.Segment) string {
	var b strings.Builder
	for i, s := range p {
		pathsyntax.Write(&b, s.Kind, s.Key, s.Value, s.Index, i == 0)
	}
	return b.String()
}

// where names the path p in an error: the path, or "the document" for the
// root.
func where(p []pathsyntax.Segment) string {
	if len(p) == 0 {
		return "the document"
	}
	return Text(p)
}
