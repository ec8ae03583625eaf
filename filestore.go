package opbus

import (
	"context"
	"fmt"

	"github.com/opbus/opbus/internal/filestore"
)

// FileStore is a Store that keeps one JSON file per key under a directory,
// written atomically (temporary file, fsync, rename, fsync of the
// directory), so records survive restarts and crashes.
type FileStore struct {
	dir *filestore.Dir
}

var (
	_ Store  = (*FileStore)(nil)
	_ Lister = (*FileStore)(nil)
)

// NewFileStore returns a FileStore in dir, creating the directory if needed.
func NewFileStore(dir string) (*FileStore, error) {
	d, err := filestore.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opbus: file store: %w", err)
	}
	return &FileStore{dir: d}, nil
}

// Load implements [Store].
func (s *FileStore) Load(ctx context.Context, key Key) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := s.dir.Load(filestore.Key(key))
	if err != nil {
		return nil, fmt.Errorf("opbus: file store: load %v: %w", key, err)
	}
	return data, nil
}

// Save implements [Store].
func (s *FileStore) Save(ctx context.Context, key Key, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.dir.Save(filestore.Key(key), data); err != nil {
		return fmt.Errorf("opbus: file store: save %v: %w", key, err)
	}
	return nil
}

// Delete implements [Store].
func (s *FileStore) Delete(ctx context.Context, key Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.dir.Delete(filestore.Key(key)); err != nil {
		return fmt.Errorf("opbus: file store: delete %v: %w", key, err)
	}
	return nil
}

// Keys implements [Lister], in key order.
func (s *FileStore) Keys(ctx context.Context) ([]Key, error) {
	keys, err := s.dir.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("opbus: file store: list %s: %w", s.dir.Root(), err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out := make([]Key, len(keys))
	for i, k := range keys {
		out[i] = Key(k)
	}
	return out, nil
}
