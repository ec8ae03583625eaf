package opbus_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/opbustest"
)

func TestMemoryStoreConformance(t *testing.T) {
	opbustest.TestStore(t, func(t *testing.T) opbus.Store { return opbus.NewMemoryStore() }, nil)
}

func TestFileStoreConformance(t *testing.T) {
	opbustest.TestStore(t, func(t *testing.T) opbus.Store {
		s, err := opbus.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, nil)
}

// TestFileStoreAtomic: a crash between writing and renaming leaves only a
// temporary file, which is neither loaded nor listed.
func TestFileStoreAtomic(t *testing.T) {
	dir := t.TempDir()
	s, err := opbus.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}
	if err := s.Save(t.Context(), key, []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, "Pod", "default", ".tmp-123")
	if err := os.WriteFile(leftover, []byte("half a rec"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys, err := s.Keys(t.Context())
	if err != nil || len(keys) != 1 || keys[0] != key {
		t.Fatalf("Keys() = %v, %v", keys, err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "Pod", "default"))
	for _, e := range entries {
		if e.Name() != "web.json" && e.Name() != ".tmp-123" {
			t.Errorf("unexpected file %s: Save left a temporary file", e.Name())
		}
	}
}
