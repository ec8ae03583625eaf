package opbus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Fixtures come from go run ./internal/fixturegen (see bench/REPORT.md).
func loadFixture(b testing.TB, name string) any {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fixtures", name))
	if err != nil {
		b.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		b.Fatal(err)
	}
	return v
}

var benchPairs = []struct{ name, old, new string }{
	{"pod", "pod-old.json", "pod-new.json"},
	{"pod-equal", "pod-old.json", "pod-old.json"},
	{"big", "big-old.json", "big-new.json"},
	{"deep", "deep-old.json", "deep-new.json"},
}

// walkFloor visits every node of both trees, as any full diff must, and
// counts the differing leaves without recording anything: the floor.
func walkFloor(a, b any) int {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return 1
		}
		n := 0
		for k, xv := range x {
			if yv, ok := y[k]; ok {
				n += walkFloor(xv, yv)
			} else {
				n++
			}
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				n++
			}
		}
		return n
	case []any:
		y, ok := b.([]any)
		if !ok {
			return 1
		}
		n := max(len(x), len(y)) - min(len(x), len(y))
		for i := 0; i < min(len(x), len(y)); i++ {
			n += walkFloor(x[i], y[i])
		}
		return n
	}
	if a != b {
		return 1
	}
	return 0
}

func BenchmarkCompare(b *testing.B) {
	k8s, err := NewComparer(&CompareOptions{
		Ignore:   []string{"metadata.resourceVersion", "metadata.managedFields", "metadata.generation"},
		ListKeys: map[string]string{"containers": "name", "containerStatuses": "name", "conditions": "type"},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range benchPairs {
		old, new := loadFixture(b, p.old), loadFixture(b, p.new)
		if p.old == p.new {
			new = loadFixture(b, p.new) // a separate copy: equal, not identical
		}
		b.Run(p.name+"/floor", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				walkFloor(old, new)
			}
		})
		b.Run(p.name+"/Compare", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compare(old, new)
			}
		})
		b.Run(p.name+"/Comparer-k8s", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				k8s.Compare(old, new)
			}
		})
	}
}

// TestFixtureDiffs pins what the benchmarks measure, so that a fixture that
// stops changing (or changes too much) is noticed.
func TestFixtureDiffs(t *testing.T) {
	want := map[string]int{"pod": 4, "pod-equal": 0, "big": 1, "deep": 1}
	for _, p := range benchPairs {
		d := Compare(loadFixture(t, p.old), loadFixture(t, p.new))
		if len(d) != want[p.name] {
			t.Errorf("%s: %d changes, want %d:\n%v", p.name, len(d), want[p.name], d)
		}
	}
}
