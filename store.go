package opbus

import (
	"context"

	"github.com/opbus/opbus/internal/filestore"
	"github.com/opbus/opbus/internal/memstore"
)

// Store keeps one record per object: the digests of the values its handlers
// last handled, its status slots, its persisted values and retry counters.
// Records are opaque bytes (JSON) to a Store; the bus encodes and decodes
// them and reports a record that does not decode as an error naming the key,
// never overwriting it.
//
// The bus calls a Store for one key at a time, but for different keys
// concurrently: implementations must be safe for concurrent use. A cancelled
// ctx should abandon the call and return ctx.Err(); the bus then keeps the
// work pending. The bus does not keep or modify data after a call returns,
// and callers of Load must not modify the returned slice.
type Store interface {
	// Load returns the record of key, or nil and no error if it has none.
	Load(ctx context.Context, key Key) ([]byte, error)
	// Save replaces the record of key. It should be atomic: after a crash
	// the record is the old one or the new one, never a mix.
	Save(ctx context.Context, key Key, data []byte) error
	// Delete removes the record of key; deleting a missing record is no
	// error.
	Delete(ctx context.Context, key Key) error
}

// Lister is implemented by a Store that can list the keys it holds records
// for. With one, the bus finds work left pending by an earlier run (a state
// that was observed but not handled when it stopped) and handles it.
type Lister interface {
	Keys(ctx context.Context) ([]Key, error)
}

// PathWriter is implemented by a Store or a [StatusSink] that writes into
// the objects it is given (an annotation, status conditions). The bus
// ignores those paths in every diff and digest, so that its own writes never
// trigger a handler.
type PathWriter interface {
	WrittenPaths() []string
}

// MemoryStore is a Store in memory: the embedded default. Records last as
// long as the process; use it when the source of objects re-lists them on
// start, or in tests. The zero MemoryStore is ready to use.
type MemoryStore struct {
	records memstore.Map[Key] // internal/memstore
}

var (
	_ Store  = (*MemoryStore)(nil)
	_ Lister = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Load implements [Store].
func (s *MemoryStore) Load(ctx context.Context, key Key) ([]byte, error) {
	return s.records.Load(ctx, key)
}

// Save implements [Store]. It keeps a copy of data.
func (s *MemoryStore) Save(ctx context.Context, key Key, data []byte) error {
	return s.records.Save(ctx, key, data)
}

// keep is Save for the bus, which hands over data (see [Store]): it keeps
// data itself, without the copy Save makes for other callers.
func (s *MemoryStore) keep(ctx context.Context, key Key, data []byte) error {
	return s.records.Keep(ctx, key, data)
}

// Delete implements [Store].
func (s *MemoryStore) Delete(ctx context.Context, key Key) error { return s.records.Delete(ctx, key) }

// Keys implements [Lister], in key order.
func (s *MemoryStore) Keys(ctx context.Context) ([]Key, error) {
	return s.records.Keys(compareKeys), nil
}

func compareKeys(a, b Key) int { return filestore.Compare(filestore.Key(a), filestore.Key(b)) }
