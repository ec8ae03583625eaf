// Package memstore keeps records in memory, one per key: the mechanism of
// the bus's MemoryStore.
//
// Invariants: a [Map] holds at most one record per key, the bytes last
// given to Keep for it, which it never copies or modifies (Save copies
// them first); it is safe for concurrent use, and its zero value is empty
// and ready to use. A call with a cancelled ctx (Keys excepted) does
// nothing and returns ctx.Err().
package memstore

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// Map is the records of keys of type K, in memory.
type Map[K comparable] struct {
	mu      sync.Mutex
	records map[K][]byte
}

// Load returns the record of key, or nil if it has none.
func (m *Map[K]) Load(ctx context.Context, key K) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.records[key], nil
}

// Save keeps a copy of data as the record of key.
func (m *Map[K]) Save(ctx context.Context, key K, data []byte) error {
	return m.Keep(ctx, key, slices.Clone(data))
}

// Keep keeps data itself as the record of key, without the copy Save
// makes: for a caller that hands data over.
func (m *Map[K]) Keep(ctx context.Context, key K, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.records == nil {
		m.records = map[K][]byte{}
	}
	m.records[key] = data
	return nil
}

// Delete removes the record of key; a missing record is no error.
func (m *Map[K]) Delete(ctx context.Context, key K) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, key)
	return nil
}

// Keys returns the keys that have a record, sorted by compare.
func (m *Map[K]) Keys(compare func(a, b K) int) []K {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.SortedFunc(maps.Keys(m.records), compare)
}
