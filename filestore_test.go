package opbus_test

import (
	"bytes"
	"io/fs"
	"path/filepath"
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
