package opbus

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FileStore is a Store that keeps one JSON file per key under a directory,
// written atomically (temporary file, fsync, rename, fsync of the
// directory), so records survive restarts and crashes.
type FileStore struct {
	dir string
}

var (
	_ Store  = (*FileStore)(nil)
	_ Lister = (*FileStore)(nil)
)

// NewFileStore returns a FileStore in dir, creating the directory if needed.
func NewFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("opbus: file store: %w", err)
	}
	return &FileStore{dir: dir}, nil
}

// Dir returns the directory that holds the records.
func (s *FileStore) Dir() string { return s.dir }

// The file of a key is <kind>/<namespace>/<name>.json, each part escaped so
// that any string maps to one safe file name and back; "_" is the empty
// namespace.
func (s *FileStore) path(key Key) string {
	ns := escapeName(key.Namespace)
	if ns == "" {
		ns = "_"
	}
	return filepath.Join(s.dir, escapeName(key.Kind), ns, escapeName(key.Name)+".json")
}

// Load implements [Store].
func (s *FileStore) Load(ctx context.Context, key Key) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
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
	final := s.path(key)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("opbus: file store: save %v: %w", key, err)
	}
	if err := writeAtomic(dir, final, data); err != nil {
		return fmt.Errorf("opbus: file store: save %v: %w", key, err)
	}
	return nil
}

func writeAtomic(dir, final string, data []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Delete implements [Store].
func (s *FileStore) Delete(ctx context.Context, key Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := os.Remove(s.path(key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("opbus: file store: delete %v: %w", key, err)
	}
	return nil
}

// Keys implements [Lister], in key order.
func (s *FileStore) Keys(ctx context.Context) ([]Key, error) {
	var keys []Key
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".json") || strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 {
			return nil // not a record of ours
		}
		k := Key{Kind: unescapeName(parts[0]), Name: unescapeName(strings.TrimSuffix(parts[2], ".json"))}
		if parts[1] != "_" {
			k.Namespace = unescapeName(parts[1])
		}
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("opbus: file store: list %s: %w", s.dir, err)
	}
	slices.SortFunc(keys, compareKeys)
	return keys, nil
}

// escapeName keeps [A-Za-z0-9-] and a '.' that is not leading, and writes
// every other byte as %XX.
func escapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || (c == '.' && i > 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func unescapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err == nil {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
