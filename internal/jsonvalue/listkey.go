package jsonvalue

import "strconv"

// A keyed list is a list of maps whose elements are identified by the
// scalar value of one field, the list key: a string, a number or a bool.
// The functions below read those keys.

// rawKey returns the scalar value of field in a list element.
func rawKey(e any, field string) (any, bool) {
	m, ok := e.(map[string]any)
	if !ok {
		return nil, false
	}
	switch k := KindOf(m[field]); k {
	case KindString, KindNumber, KindBool:
		return m[field], true
	}
	return nil, false
}

// Keyable reports whether every element of l has a scalar key in field.
func Keyable(l []any, field string) bool {
	for _, e := range l {
		if _, ok := rawKey(e, field); !ok {
			return false
		}
	}
	return true
}

// sameKeys reports whether a and b, of equal length, have scalar keys that
// are pairwise equal.
func sameKeys(a, b []any, field string) bool {
	for i := range a {
		ka, oka := rawKey(a[i], field)
		kb, okb := rawKey(b[i], field)
		if !oka || !okb || !Equal(ka, kb) {
			return false
		}
	}
	return true
}

// SameDistinctKeys reports whether a and b, of equal length, have scalar
// keys that are pairwise equal and, in a, distinct, reading each key once
// for the usual short lists (the profile of bench BenchmarkDispatch showed
// a separate duplicate check reading every pair's keys again).
func SameDistinctKeys(a, b []any, field string) bool {
	if len(a) > 8 {
		return sameKeys(a, b, field) && !HasDuplicateKeys(a, field)
	}
	var buf [8]any
	keys := buf[:0]
	for i := range a {
		ka, oka := rawKey(a[i], field)
		kb, okb := rawKey(b[i], field)
		if !oka || !okb || !Equal(ka, kb) {
			return false
		}
		for _, k := range keys {
			if Equal(k, ka) {
				return false
			}
		}
		keys = append(keys, ka)
	}
	return true
}

// ElementKey returns the value of field in a list element, as text, and
// whether it has a scalar one.
func ElementKey(e any, field string) (string, bool) {
	m, ok := e.(map[string]any)
	if !ok {
		return "", false
	}
	switch v := m[field].(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case nil:
		return "", false
	default:
		n, ok := AsNumber(v)
		if !ok {
			return "", false
		}
		return n.Text(), true
	}
}

// HasDuplicateKeys reports whether two elements of l, which has scalar
// keys, have equal ones.
func HasDuplicateKeys(l []any, field string) bool {
	if len(l) < 2 {
		return false
	}
	if len(l) <= 8 { // quadratic but allocation-free for the usual short lists
		for i := range l {
			ki, _ := rawKey(l[i], field)
			for j := i + 1; j < len(l); j++ {
				if kj, _ := rawKey(l[j], field); Equal(ki, kj) {
					return true
				}
			}
		}
		return false
	}
	_, ok := KeyIndex(l, field)
	return !ok
}

// KeyIndex maps each element's key to its index; it fails on a missing,
// non-scalar or duplicate key.
func KeyIndex(l []any, field string) (map[string]int, bool) {
	idx := make(map[string]int, len(l))
	for i, e := range l {
		k, ok := ElementKey(e, field)
		if !ok {
			return nil, false
		}
		if _, dup := idx[k]; dup {
			return nil, false
		}
		idx[k] = i
	}
	return idx, true
}
