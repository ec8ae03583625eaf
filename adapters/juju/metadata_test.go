package juju

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseEndpoints(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"metadata.yaml", `
name: istio-gateway
summary: An istio gateway  # a comment
requires:
  istio-pilot:
    interface: k8s-service
    limit: 1
provides:
  metrics: {interface: prometheus}
peers:
  "cluster":
    interface: cluster
`, []string{"cluster", "istio-pilot", "metrics"}},
		{"unified charmcraft.yaml with other nesting", `
type: charm
config:
  options:
    requires:
      type: string
requires:
    db:
        interface: pgsql
        optional: true

    # a comment at another indentation
    cache:
      interface: redis
parts:
  charm:
    plugin: dump
`, []string{"cache", "db"}},
		{"empty sections", "requires: {}\nprovides:\npeers:\n", nil},
		{"windows line endings", "requires:\r\n  db:\r\n    interface: x\r\n", []string{"db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEndpoints(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseEndpointsErrors(t *testing.T) {
	for _, doc := range []string{
		"requires: {db: {interface: x}}\n",
		"requires:\n  - db\n",
		"requires:\n  'db\n",
		"requires:\n\tdb:\n",
	} {
		if got, err := parseEndpoints(doc); err == nil {
			t.Errorf("%q: got %q, want an error", doc, got)
		}
	}
}

func TestReadEndpoints(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadEndpoints(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty dir: got %v, want fs.ErrNotExist", err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("charmcraft.yaml", "requires:\n  from-charmcraft:\n")
	if got, err := ReadEndpoints(dir); err != nil || !reflect.DeepEqual(got, []string{"from-charmcraft"}) {
		t.Errorf("charmcraft.yaml only: got %q, %v", got, err)
	}
	write("metadata.yaml", "requires:\n  from-metadata:\n")
	if got, err := ReadEndpoints(dir); err != nil || !reflect.DeepEqual(got, []string{"from-metadata"}) {
		t.Errorf("metadata.yaml first: got %q, %v", got, err)
	}
	write("metadata.yaml", "requires: [db]\n")
	if _, err := ReadEndpoints(dir); err == nil || !strings.Contains(err.Error(), "metadata.yaml") {
		t.Errorf("bad metadata.yaml: got %v, want an error naming it", err)
	}
}
