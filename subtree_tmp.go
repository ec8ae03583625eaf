package opbus

import (
	"errors"
	"math"
	"slices"
)

// Temporary until the list-path fix lands.
func touches(_ *Comparer, d Diff, fields []Path) bool {
	if len(fields) == 0 {
		return len(d) > 0
	}
	for _, f := range fields {
		if d.Touches(f) {
			return true
		}
	}
	return false
}

func relevant(c *Comparer, changes Diff, fields []Path, _, _ map[string]any) Diff {
	if len(fields) == 0 || len(changes) == 0 {
		return changes
	}
	var out Diff
	for _, f := range fields {
		for _, ch := range changes.narrow(c, f) {
			if !slices.ContainsFunc(out, func(o Change) bool { return o.Path.Equal(ch.Path) }) {
				out = append(out, ch)
			}
		}
	}
	slices.SortStableFunc(out, func(x, y Change) int { return ComparePaths(x.Path, y.Path) })
	return out
}

func checkDocument(obj map[string]any) error {
	if obj == nil {
		return errors.New("opbus: document is nil")
	}
	if plain(obj, 0) {
		return nil
	}
	return Validate(obj)
}

// plain reports, without allocating, whether v holds only JSON-like values
// nested at most maxDepth deep; the slow walk names what it does not.
func plain(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, int64, int:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

const maxDepth = 1000
