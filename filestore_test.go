package opbus_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opbus/opbus"
)

// TestFileStoreLongNames: a key whose parts, escaped, do not fit in a file
// name (at most 255 bytes on common file systems) still saves, loads, lists
// and deletes exactly.
func TestFileStoreLongNames(t *testing.T) {
	long := strings.Repeat("a", 253) // the longest Kubernetes name
	tests := []struct {
		name string
		key  opbus.Key
	}{
		{"253-character name", opbus.Key{Kind: "Pod", Namespace: "default", Name: long}},
		{"253-character namespace", opbus.Key{Kind: "Pod", Namespace: long, Name: "web"}},
		{"long kind", opbus.Key{Kind: strings.Repeat("VeryLongKind", 30), Namespace: "default", Name: "web"}},
		{"all long", opbus.Key{Kind: strings.Repeat("K", 300), Namespace: long + "x", Name: long + "y"}},
		{"long after escaping", opbus.Key{Kind: "unit", Name: strings.Repeat("app/", 60)}},
		{"just fits", opbus.Key{Kind: "Pod", Namespace: "default", Name: strings.Repeat("b", 200)}},
		{"invalid UTF-8 and NUL", opbus.Key{Kind: "Pod", Namespace: "n\xff\x00", Name: strings.Repeat("\xfe", 100)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			s, err := opbus.NewFileStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			other := opbus.Key{Kind: "Pod", Namespace: "default", Name: "other"}
			data := []byte(`{"v":1,"values":{"n":"long"}}`)
			if err := s.Save(ctx, tc.key, data); err != nil {
				t.Fatalf("Save: got %v, want nil", err)
			}
			if err := s.Save(ctx, other, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			got, err := s.Load(ctx, tc.key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Load: got %q, %v, want %q, nil", got, err, data)
			}
			keys, err := s.Keys(ctx)
			if err != nil || len(keys) != 2 || (keys[0] != tc.key && keys[1] != tc.key) {
				t.Fatalf("Keys: got %q, %v, want %q and %v", keys, err, tc.key, other)
			}
			if err := s.Delete(ctx, tc.key); err != nil {
				t.Fatalf("Delete: got %v, want nil", err)
			}
			if err := s.Delete(ctx, other); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Load(ctx, tc.key); err != nil || got != nil {
				t.Errorf("Load after Delete: got %q, %v, want nil, nil", got, err)
			}
			err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					t.Errorf("after Delete: got file %s left, want none", p)
				}
				if err == nil && len(d.Name()) > 255 {
					t.Errorf("file name of %d bytes: got %s", len(d.Name()), p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// fileStoreV1Keys are the keys of testdata/filestore-v1: the record of
// the i-th one holds {"n":i}.
var fileStoreV1Keys = []opbus.Key{
	{Kind: "Pod", Namespace: "default", Name: "web-0"},
	{Kind: "Node", Name: "node.example.com"},
	{Kind: "unit", Name: "app/0"},
	{Kind: "ConfigMap", Namespace: "kube-system", Name: ".hidden name_x"},
	{Kind: "Widget", Namespace: "_", Name: "é%~"},
	{Kind: "Pod", Namespace: "default", Name: strings.Repeat("a", 253)},
	{Kind: strings.Repeat("K", 300), Namespace: "ns", Name: "n"},
}

// TestFileStoreReadsItsLayout: the file layout is a format on disk. A
// directory written by an earlier build (testdata/filestore-v1: escaped
// names, the empty namespace, hashed parts with their key files) lists and
// loads as it was written, and saving the same keys afresh writes the same
// files with the same bytes.
func TestFileStoreReadsItsLayout(t *testing.T) {
	ctx := t.Context()
	old, err := opbus.NewFileStore(filepath.Join("testdata", "filestore-v1"))
	if err != nil {
		t.Fatal(err)
	}
	want := []opbus.Key{fileStoreV1Keys[3], fileStoreV1Keys[6], fileStoreV1Keys[1], fileStoreV1Keys[5],
		fileStoreV1Keys[0], fileStoreV1Keys[4], fileStoreV1Keys[2]} // in key order
	keys, err := old.Keys(ctx)
	if err != nil || !slices.Equal(keys, want) {
		t.Fatalf("Keys: got %q, %v, want %q", keys, err, want)
	}
	dir := t.TempDir()
	fresh, err := opbus.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range fileStoreV1Keys {
		data, err := old.Load(ctx, k)
		if want := fmt.Sprintf(`{"n":%d}`, i); err != nil || string(data) != want {
			t.Errorf("Load(%v): got %q, %v, want %s", k, data, err, want)
		}
		if err := fresh.Save(ctx, k, data); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := treeOf(t, dir), treeOf(t, filepath.Join("testdata", "filestore-v1")); !maps.Equal(got, want) {
		t.Errorf("files written: got %q, want %q", got, want)
	}
}

// treeOf returns the files under dir, by path relative to it, with their
// contents.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
