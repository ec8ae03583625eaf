package opbus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// maxComponent bounds the bytes of an escaped part of a file path, well
// below the 255 bytes most file systems allow in a file name.
const maxComponent = 200

// The file of a key is <kind>/<namespace>/<name>.json, each part escaped so
// that any string maps to one safe file name and back; "_" is the empty
// namespace. A part that escapes to more than maxComponent bytes (a
// 253-character Kubernetes name may be longer once escaped) is named by
// its hash instead, "~" and 64 hex digits, which escaping never produces;
// the full key is then kept in a sidecar file, <name>.key beside
// <name>.json, written before the record and removed after it.
func (s *FileStore) path(key Key) (record, sidecar string) {
	ns := component(key.Namespace)
	if ns == "" {
		ns = "_"
	}
	kind, name := component(key.Kind), component(key.Name)
	record = filepath.Join(s.dir, kind, ns, name+".json")
	if hashed(kind) || hashed(ns) || hashed(name) {
		sidecar = strings.TrimSuffix(record, ".json") + ".key"
	}
	return record, sidecar
}

// component returns the file name for one part of a key.
func component(s string) string {
	if e := escapeName(s); len(e) <= maxComponent {
		return e
	}
	sum := sha256.Sum256([]byte(s))
	return "~" + hex.EncodeToString(sum[:])
}

// hashed reports whether a file name component is a hash (see component).
func hashed(component string) bool { return strings.HasPrefix(component, "~") }

// keyHeader starts a sidecar file; the kind, namespace and name follow,
// escaped, one a line.
const keyHeader = "opbus key v1"

func encodeKeyFile(key Key) []byte {
	return []byte(keyHeader + "\n" + escapeName(key.Kind) + "\n" + escapeName(key.Namespace) + "\n" + escapeName(key.Name) + "\n")
}

func decodeKeyFile(data []byte) (Key, error) {
	lines := strings.Split(string(data), "\n")
	if len(lines) != 5 || lines[0] != keyHeader || lines[4] != "" {
		return Key{}, fmt.Errorf("expected %q and three lines of kind, namespace and name", keyHeader)
	}
	return Key{Kind: unescapeName(lines[1]), Namespace: unescapeName(lines[2]), Name: unescapeName(lines[3])}, nil
}

// Load implements [Store].
func (s *FileStore) Load(ctx context.Context, key Key) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	file, _ := s.path(key)
	data, err := os.ReadFile(file)
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
	final, sidecar := s.path(key)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("opbus: file store: save %v: %w", key, err)
	}
	if sidecar != "" {
		want := encodeKeyFile(key)
		if have, err := os.ReadFile(sidecar); err != nil || !bytes.Equal(have, want) {
			if err := writeAtomic(dir, sidecar, want); err != nil {
				return fmt.Errorf("opbus: file store: save %v: key file: %w", key, err)
			}
		}
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
	file, sidecar := s.path(key)
	for _, p := range []string{file, sidecar} { // the record first: a key file alone is not listed
		if p == "" {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("opbus: file store: delete %v: %w", key, err)
		}
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
		name := strings.TrimSuffix(parts[2], ".json")
		if hashed(parts[0]) || hashed(parts[1]) || hashed(name) {
			k, err := s.sidecarKey(p)
			if err != nil {
				return err
			}
			keys = append(keys, k)
			return nil
		}
		k := Key{Kind: unescapeName(parts[0]), Name: unescapeName(name)}
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

// sidecarKey reads the key of the record at file from its sidecar file,
// and checks that the key maps to that file.
func (s *FileStore) sidecarKey(file string) (Key, error) {
	sidecar := strings.TrimSuffix(file, ".json") + ".key"
	data, err := os.ReadFile(sidecar)
	if err != nil {
		return Key{}, fmt.Errorf("key file of %s: %w", file, err)
	}
	k, err := decodeKeyFile(data)
	if err != nil {
		return Key{}, fmt.Errorf("key file %s: %w", sidecar, err)
	}
	if want, _ := s.path(k); want != file {
		return Key{}, fmt.Errorf("key file %s: key %v belongs in %s", sidecar, k, want)
	}
	return k, nil
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
