package bench

import (
	"encoding/json"
	"math"
	"strconv"
)

// walkDiffers is the floor: a plain recursive walk of both trees that reports whether
// they differ. It keeps walking after the first difference, because a diff must visit
// every node too (and because an early exit would depend on Go's random map order).
// It does no path bookkeeping and allocates nothing.
func walkDiffers(a, b any) bool {
	return walkCount(a, b) > 0
}

// walkCount returns how many places differ: a map key present on one side only, a list
// length, a type, or a scalar value.
func walkCount(a, b any) int {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok {
			return 1
		}
		n, shared := 0, 0
		for k, av := range a {
			bv, ok := b[k]
			if !ok {
				n++ // removed
				continue
			}
			shared++
			n += walkCount(av, bv)
		}
		return n + len(b) - shared // plus the keys added in b
	case []any:
		b, ok := b.([]any)
		if !ok {
			return 1
		}
		n := 0
		if len(a) != len(b) {
			n++
		}
		for i := range min(len(a), len(b)) {
			n += walkCount(a[i], b[i])
		}
		return n
	case string:
		if b, ok := b.(string); ok && a == b {
			return 0
		}
		return 1
	case bool:
		if b, ok := b.(bool); ok && a == b {
			return 0
		}
		return 1
	case nil:
		if b == nil {
			return 0
		}
		return 1
	case float64:
		if b, ok := b.(float64); ok {
			return boolInt(a != b)
		}
	case int64:
		if b, ok := b.(int64); ok {
			return boolInt(a != b)
		}
	}
	// Numbers of different Go types, or json.Number.
	x, okA := toFloat(a)
	y, okB := toFloat(b)
	if okA && okB && x == y {
		return 0
	}
	return 1
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil && !math.IsNaN(f)
	}
	return 0, false
}
