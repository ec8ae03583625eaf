package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestMeasureFixture checks every figure on a small package whose counts
// are known (testdata/fixture; its _test.go file and its file excluded by a
// build constraint are not measured).
func TestMeasureFixture(t *testing.T) {
	m, err := Measure("testdata/fixture", 10)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 2 || m.Lines != 62 {
		t.Errorf("files, lines = %d, %d; want 2, 62", m.Files, m.Lines)
	}
	if want := []string{"a.go:13", "b.go:6", "b.go:7"}; !reflect.DeepEqual(m.Conds, want) {
		t.Errorf("sync.Cond uses = %v; want %v", m.Conds, want)
	}
	want := []Func{
		{Name: "twelve", File: "a.go", Line: 35, Lines: 12},
		{Name: "Bus.eleven", File: "b.go", Line: 6, Lines: 11},
	}
	if !reflect.DeepEqual(m.Long, want) {
		t.Errorf("long functions = %+v; want %+v", m.Long, want)
	}
	if m.Longest != want[0] {
		t.Errorf("longest = %+v; want %+v", m.Longest, want[0])
	}
	if m.BusFields != 8 {
		t.Errorf("Bus fields = %d; want 8", m.BusFields)
	}
	flags := []Flag{
		{Name: "queued", Type: "bool", Owner: "queue", Section: "queue"},
		{Name: "held", Type: "bool", Owner: "write", Section: "queue"},
		{Name: "live", Type: "bool", Section: ""},
		{Name: "gone", Type: "bool", Section: ""},
		{Name: "done", Type: "atomic.Bool", Owner: "pass", Section: "pass"},
	}
	if !reflect.DeepEqual(m.Flags, flags) {
		t.Errorf("keyState flags = %+v; want %+v", m.Flags, flags)
	}

	var out bytes.Buffer
	if err := m.Print(&out, 10); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"non-test lines    62",
		"functions over 10 lines",
		"twelve            12  (a.go:35)",
		"longest function  twelve, 12 lines",
		"Bus fields        8",
		"keyState bool fields  5 (3 with an owner on the field)",
		"held bool         owner: write; section: queue",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("table lacks %q:\n%s", line, out.String())
		}
	}
}

// TestMeasureLimitAndErrors checks that the limit decides which functions
// are listed, and that a directory that cannot be read is an error naming it.
func TestMeasureLimitAndErrors(t *testing.T) {
	m, err := Measure("testdata/fixture", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Long) != 0 || m.Longest.Name != "twelve" {
		t.Errorf("long, longest = %v, %v; want none, twelve", m.Long, m.Longest)
	}
	if m, err := Measure("testdata", 80); err == nil {
		t.Errorf("Measure of a directory without Go files = %+v; want an error", m)
	}
	if _, err := Measure("testdata/none", 80); err == nil || !strings.Contains(err.Error(), "testdata/none") {
		t.Errorf("Measure of a missing directory: err = %v; want one naming it", err)
	}
}
