package opbus

import (
	"context"

	"github.com/opbus/opbus/internal/filestore"
)

// FileStore is a Store that keeps one JSON file per key under a directory,
// written atomically (temporary file, fsync, rename, fsync of the
// directory), so records survive restarts and crashes.
type FileStore struct {
	s *filestore.Store[Key] // the layout and the Store contract (internal/filestore)
}

var (
	_ Store  = (*FileStore)(nil)
	_ Lister = (*FileStore)(nil)
)

// NewFileStore returns a FileStore in dir, creating the directory if needed.
func NewFileStore(dir string) (*FileStore, error) {
	s, err := filestore.OpenStore[Key](dir)
	if err != nil {
		return nil, err
	}
	return &FileStore{s: s}, nil
}

// Load implements [Store].
func (s *FileStore) Load(ctx context.Context, key Key) ([]byte, error) { return s.s.Load(ctx, key) }

// Save implements [Store].
func (s *FileStore) Save(ctx context.Context, key Key, data []byte) error {
	return s.s.Save(ctx, key, data)
}

// Delete implements [Store].
func (s *FileStore) Delete(ctx context.Context, key Key) error { return s.s.Delete(ctx, key) }

// Keys implements [Lister], in key order.
func (s *FileStore) Keys(ctx context.Context) ([]Key, error) { return s.s.Keys(ctx) }
