package opbus

import (
	"fmt"

	"github.com/opbus/opbus/internal/jsonvalue"
)

// apply, the tests' oracle for Compare (TestApply, FuzzCompareApply), returns
// old with the changes of d applied, leaving old untouched:
// apply(a, Compare(a, b)) equals b. List changes follow the order [Compare]
// produces (a change or remove names the old list's index, an add the new
// list's). An element added to a keyed list is appended, so a keyed list's
// order is not restored. A change whose path does not exist is an error.
func apply(old any, d Diff) (any, error) {
	root := deepCopy(old)
	for _, c := range d {
		var err error
		if root, err = applyAt(root, c.Path, c); err != nil {
			return nil, fmt.Errorf("opbus: apply %s %s: %w", c.Op, c.Path, err)
		}
	}
	return compact(root), nil
}

// removed marks a list element removed by Apply until the list is compacted,
// so that later changes still find elements by their old index.
type removed struct{}

func applyAt(v any, p Path, c Change) (any, error) {
	if len(p) == 0 {
		switch c.Op {
		case OpRemove:
			return removed{}, nil
		default:
			return deepCopy(c.New), nil
		}
	}
	s := p[0]
	switch s.Kind {
	case SegKey:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("key %q: not a map", s.Key)
		}
		e, exists := m[s.Key]
		if len(p) == 1 {
			switch c.Op {
			case OpRemove:
				if !exists {
					return nil, fmt.Errorf("key %q: no such key", s.Key)
				}
				delete(m, s.Key)
			default:
				m[s.Key] = deepCopy(c.New)
			}
			return m, nil
		}
		if !exists {
			return nil, fmt.Errorf("key %q: no such key", s.Key)
		}
		e, err := applyAt(e, p[1:], c)
		if err != nil {
			return nil, err
		}
		m[s.Key] = e
		return m, nil
	case SegIndex, SegMatch:
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: not a list", s)
		}
		i := -1
		if s.Kind == SegIndex {
			i = s.Index
		} else {
			for j, e := range l {
				if k, ok := jsonvalue.ElementKey(e, s.Key); ok && k == s.Value {
					i = j
					break
				}
			}
		}
		if len(p) == 1 && c.Op == OpAdd {
			switch {
			case s.Kind == SegMatch && i < 0, i == len(l):
				return append(l, deepCopy(c.New)), nil
			case s.Kind == SegIndex && i < len(l):
				l = append(l, nil)
				copy(l[i+1:], l[i:])
				l[i] = deepCopy(c.New)
				return l, nil
			}
			return nil, fmt.Errorf("%s: list has %d elements", s, len(l))
		}
		if i < 0 || i >= len(l) {
			return nil, fmt.Errorf("%s: no such element in a list of %d", s, len(l))
		}
		e, err := applyAt(l[i], p[1:], c)
		if err != nil {
			return nil, err
		}
		l[i] = e
		return l, nil
	}
	return nil, fmt.Errorf("%s: not a concrete path", s)
}

// compact drops the elements Apply marked removed.
func compact(v any) any {
	switch x := v.(type) {
	case removed:
		return nil
	case map[string]any:
		for k, e := range x {
			x[k] = compact(e)
		}
	case []any:
		out := x[:0]
		for _, e := range x {
			if _, gone := e.(removed); !gone {
				out = append(out, compact(e))
			}
		}
		clear(x[len(out):])
		return out
	}
	return v
}

// deepCopy copies maps and lists; other values are immutable or opaque.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}
