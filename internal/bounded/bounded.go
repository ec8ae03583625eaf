// Package bounded is a map that keeps at most a fixed number of entries:
// to make room past its bound, Put forgets an entry, which one
// unspecified. It suits a memory that is worth having but may be lost,
// such as the bus's memory of the keys it forgot after their deletion,
// which recognises a repeated deletion of an incarnation already deleted.
//
// Invariant: Len is at most the bound given to [New]; an entry is there
// from its Put until its Take or Delete, or until a Put of another key
// made room.
//
// A Map is not safe for concurrent use: its owner guards it.
package bounded

// Map is a map of at most Max entries. Make one with [New].
type Map[K comparable, V any] struct {
	m   map[K]V
	max int
}

// New returns an empty Map that keeps at most max entries; max must be
// positive.
func New[K comparable, V any](max int) *Map[K, V] {
	if max <= 0 {
		panic("bounded: New needs a positive bound")
	}
	return &Map[K, V]{m: map[K]V{}, max: max}
}

// Put sets the entry of k to v, first forgetting another entry if the map
// is full.
func (m *Map[K, V]) Put(k K, v V) {
	if _, ok := m.m[k]; !ok && len(m.m) >= m.max {
		for old := range m.m {
			delete(m.m, old)
			break
		}
	}
	m.m[k] = v
}

// Take removes the entry of k and returns its value, and whether there
// was one.
func (m *Map[K, V]) Take(k K) (V, bool) {
	v, ok := m.m[k]
	if ok {
		delete(m.m, k)
	}
	return v, ok
}

// Delete removes the entry of k, if any.
func (m *Map[K, V]) Delete(k K) { delete(m.m, k) }

// Len returns the number of entries.
func (m *Map[K, V]) Len() int { return len(m.m) }
