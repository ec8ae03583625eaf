package filestore

import (
	"context"
	"fmt"
)

// Store is a [Dir] with the contract of the bus's Store, for keys of type
// K (the bus's Key, which has Key's fields): a call with a cancelled ctx
// does nothing and returns ctx.Err(), and every other error names the
// file store, what it was doing and the key or directory.
type Store[K ~struct{ Kind, Namespace, Name string }] struct {
	dir *Dir
}

// OpenStore returns the Store of the Dir at root, creating the directory
// if needed.
func OpenStore[K ~struct{ Kind, Namespace, Name string }](root string) (*Store[K], error) {
	d, err := Open(root)
	if err != nil {
		return nil, fmt.Errorf("opbus: file store: %w", err)
	}
	return &Store[K]{dir: d}, nil
}

// Load returns the record of key, or nil and no error if it has none.
func (s *Store[K]) Load(ctx context.Context, key K) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := s.dir.Load(Key(key))
	if err != nil {
		return nil, fmt.Errorf("opbus: file store: load %v: %w", Key(key), err)
	}
	return data, nil
}

// Save replaces the record of key atomically.
func (s *Store[K]) Save(ctx context.Context, key K, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.dir.Save(Key(key), data); err != nil {
		return fmt.Errorf("opbus: file store: save %v: %w", Key(key), err)
	}
	return nil
}

// Delete removes the record of key; a missing record is no error.
func (s *Store[K]) Delete(ctx context.Context, key K) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.dir.Delete(Key(key)); err != nil {
		return fmt.Errorf("opbus: file store: delete %v: %w", Key(key), err)
	}
	return nil
}

// Keys returns the keys of the records, in [Compare] order; nil if there
// are none.
func (s *Store[K]) Keys(ctx context.Context) ([]K, error) {
	keys, err := s.dir.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("opbus: file store: list %s: %w", s.dir.Root(), err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out := make([]K, len(keys))
	for i, k := range keys {
		out[i] = K(k)
	}
	return out, nil
}
