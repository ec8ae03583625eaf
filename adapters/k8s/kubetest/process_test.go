package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	many := make([]string, 0, 100)
	for i := range 100 {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	tests := []struct {
		name    string
		content string
		n       int
		want    []string
	}{
		{name: "empty file", content: "", n: 3, want: nil},
		{name: "fewer lines than asked", content: "a\nb\n", n: 3, want: []string{"a", "b"}},
		{name: "no final newline", content: "a\nb", n: 3, want: []string{"a", "b"}},
		{name: "only the last n", content: strings.Join(many, "\n") + "\n", n: 2, want: []string{"line 98", "line 99"}},
		{name: "huge lines: only what fits in the read", content: strings.Repeat("x", 300<<10) + "\nlast\n", n: 3, want: []string{"last"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := tail(path, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChildEnvDropsEtcdVariables(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "ETCD_DATA_DIR=/x", "HOME=/root", "ETCD_NAME=y"})
	want := []string{"PATH=/bin", "HOME=/root"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
