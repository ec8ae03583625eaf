package jsonvalue

import "slices"

// Project returns obj cut down to the values at the paths of map keys
// keys, in maps of their own: each path keeps what lies at it, and a path
// below one already kept adds nothing. A path obj does not hold is left
// out. The values kept are shared with obj, never copied or modified; the
// maps on the way to them are new. No path (an empty one) keeps all of
// obj, which is returned as it is.
func Project(obj map[string]any, keys [][]string) map[string]any {
	if slices.ContainsFunc(keys, func(p []string) bool { return len(p) == 0 }) {
		return obj
	}
	keys = slices.Clone(keys)
	slices.SortStableFunc(keys, func(a, b []string) int { return len(a) - len(b) })
	out := map[string]any{}
	var taken [][]string
	for _, p := range keys {
		if slices.ContainsFunc(taken, func(t []string) bool { return len(t) <= len(p) && slices.Equal(t, p[:len(t)]) }) {
			continue
		}
		v, ok := at(obj, p)
		if !ok {
			continue
		}
		taken = append(taken, p)
		m := out
		for _, k := range p[:len(p)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[p[len(p)-1]] = v
	}
	return out
}

// at returns the value at the path of map keys p in v, and whether v has
// one there.
func at(v any, p []string) (any, bool) {
	for _, k := range p {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
