package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// fixtureDir holds the files written by internal/fixturegen.
const fixtureDir = "../testdata/fixtures"

// input is one pair of documents, held in every form a peer may want.
type input struct {
	name string

	// oldJSON and newJSON are compact JSON, as a watch event carries it. They never
	// share a backing array, even for pod-equal.
	oldJSON, newJSON []byte

	// oldObj and newObj are decoded the way client-go decodes unstructured objects:
	// integers as int64, other numbers as float64.
	oldObj, newObj any

	// oldF64 and newF64 are decoded by encoding/json: every number is a float64.
	oldF64, newF64 any

	// changed reports whether the two documents differ.
	changed bool
}

// diffFixtures are the inputs of the diff family, in table order.
var diffFixtures = []struct {
	name, old, new string
	changed        bool
}{
	{"pod", "pod-old.json", "pod-new.json", true},
	// Both sides are decoded separately from the same file: identical content, distinct
	// trees, so no peer can take a same-pointer shortcut.
	{"pod-equal", "pod-old.json", "pod-old.json", false},
	{"big", "big-old.json", "big-new.json", true},
	{"deep", "deep-old.json", "deep-new.json", true},
}

var (
	inputsMu sync.Mutex
	inputs   = map[string]*input{}
)

// loadInput returns the named pair, reading and decoding it on first use.
func loadInput(tb testing.TB, name, oldFile, newFile string, changed bool) *input {
	tb.Helper()
	inputsMu.Lock()
	defer inputsMu.Unlock()
	if in, ok := inputs[name]; ok {
		return in
	}
	in := &input{
		name:    name,
		oldJSON: readCompact(tb, oldFile),
		newJSON: readCompact(tb, newFile),
		changed: changed,
	}
	in.oldObj = decodeInt64(tb, in.oldJSON)
	in.newObj = decodeInt64(tb, in.newJSON)
	in.oldF64 = decodeFloat64(tb, in.oldJSON)
	in.newF64 = decodeFloat64(tb, in.newJSON)
	inputs[name] = in
	return in
}

// diffInput returns the diff-family fixture with the given name.
func diffInput(tb testing.TB, name string) *input {
	tb.Helper()
	for _, f := range diffFixtures {
		if f.name == name {
			return loadInput(tb, f.name, f.old, f.new, f.changed)
		}
	}
	tb.Fatalf("no fixture %q", name)
	return nil
}

// readCompact reads a fixture file and compacts it: the files may be indented for review,
// but events arrive compact, and decoding cost depends on it.
func readCompact(tb testing.TB, file string) []byte {
	tb.Helper()
	b, err := readFixture(file)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// readFixture is readCompact for callers without a testing.TB.
func readFixture(file string) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(fixtureDir, file))
	if err != nil {
		return nil, fmt.Errorf("%w (generate the fixtures with: go run ./internal/fixturegen)", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return buf.Bytes(), nil
}

// decodeObject decodes a JSON object the way client-go decodes unstructured objects
// (integers as int64).
func decodeObject(b []byte) (map[string]any, error) {
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeInt64(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	if err := utiljson.Unmarshal(b, &v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func decodeFloat64(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatal(err)
	}
	return v
}
