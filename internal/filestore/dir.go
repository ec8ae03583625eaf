package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is a directory of records laid out as the package doc says.
type Dir struct {
	root string
}

// Open returns the Dir at root, creating the directory if needed.
func Open(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	return &Dir{root: root}, nil
}

// Root returns the directory d lays records out in.
func (d *Dir) Root() string { return d.root }

// Load returns the record of key, or nil and no error if there is none.
func (d *Dir) Load(key Key) ([]byte, error) {
	file, _ := paths(d.root, key)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// Save writes the record of key atomically, after its sidecar file if it
// needs one and the sidecar does not already hold key.
func (d *Dir) Save(key Key, data []byte) error {
	final, sidecar := paths(d.root, key)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if sidecar != "" {
		want := encodeKeyFile(key)
		if have, err := os.ReadFile(sidecar); err != nil || !bytes.Equal(have, want) {
			if err := writeAtomic(dir, sidecar, want); err != nil {
				return fmt.Errorf("key file: %w", err)
			}
		}
	}
	return writeAtomic(dir, final, data)
}

// writeAtomic writes data to the file final in dir: a temporary file,
// fsync, rename, fsync of dir.
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
	dd, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer dd.Close()
	return dd.Sync()
}

// Delete removes the record of key, then its sidecar file; a missing
// file is no error.
func (d *Dir) Delete(key Key) error {
	file, sidecar := paths(d.root, key)
	for _, p := range []string{file, sidecar} { // the record first: a key file alone is not listed
		if p == "" {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Keys returns the keys of the records in d, in [Compare] order. A file
// that is not a record of the layout (another depth, another suffix, a
// temporary file) is skipped; a hashed record whose sidecar file is
// missing, malformed or holds a key of another file is an error.
func (d *Dir) Keys(ctx context.Context) ([]Key, error) {
	var keys []Key
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() || !strings.HasSuffix(p, ".json") || strings.HasPrefix(e.Name(), ".tmp-") {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 {
			return nil // not a record of ours
		}
		name := strings.TrimSuffix(parts[2], ".json")
		if hashed(parts[0]) || hashed(parts[1]) || hashed(name) {
			k, err := d.sidecarKey(p)
			if err != nil {
				return err
			}
			keys = append(keys, k)
			return nil
		}
		k := Key{Kind: Unescape(parts[0]), Name: Unescape(name)}
		if parts[1] != "_" {
			k.Namespace = Unescape(parts[1])
		}
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(keys, Compare)
	return keys, nil
}

// sidecarKey reads the key of the record at file from its sidecar file,
// and checks that the key maps to that file.
func (d *Dir) sidecarKey(file string) (Key, error) {
	sidecar := strings.TrimSuffix(file, ".json") + ".key"
	data, err := os.ReadFile(sidecar)
	if err != nil {
		return Key{}, fmt.Errorf("key file of %s: %w", file, err)
	}
	k, err := decodeKeyFile(data)
	if err != nil {
		return Key{}, fmt.Errorf("key file %s: %w", sidecar, err)
	}
	if want, _ := paths(d.root, k); want != file {
		return Key{}, fmt.Errorf("key file %s: key %v belongs in %s", sidecar, k, want)
	}
	return k, nil
}
