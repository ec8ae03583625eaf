package bounded

// Map is a map from K to V of at most a fixed number of entries.
type Map[K comparable, V any] struct {
	max int
	m   map[K]V
}

// New returns an empty Map of at most max entries (max > 0).
func New[K comparable, V any](max int) *Map[K, V] {
	return &Map[K, V]{max: max, m: map[K]V{}}
}

// Put sets the value of k, first dropping an arbitrary entry if the map
// is full (even if k is in it).
func (m *Map[K, V]) Put(k K, v V) {
	if len(m.m) >= m.max {
		for old := range m.m {
			delete(m.m, old)
			break
		}
	}
	m.m[k] = v
}

// Take returns the value of k and removes it; ok reports whether k was
// in the map.
func (m *Map[K, V]) Take(k K) (v V, ok bool) {
	v, ok = m.m[k]
	if ok {
		delete(m.m, k)
	}
	return v, ok
}

// Delete removes k, if it is in the map.
func (m *Map[K, V]) Delete(k K) { delete(m.m, k) }

// Len returns the number of entries.
func (m *Map[K, V]) Len() int { return len(m.m) }
