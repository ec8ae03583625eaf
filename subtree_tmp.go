package opbus

import (
	"errors"
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
	return Validate(obj)
}
