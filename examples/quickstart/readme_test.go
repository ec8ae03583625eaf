package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEShowsOutput checks that the repository's README shows the
// quickstart's output as Example_main checks it, line for line.
func TestREADMEShowsOutput(t *testing.T) {
	src, err := os.ReadFile("main_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, out, ok := strings.Cut(string(src), "\t// Output:\n")
	if !ok {
		t.Fatal("main_test.go: no // Output: in Example_main")
	}
	var want strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "\t//") {
			break
		}
		want.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "\t//"), " ") + "\n")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "The quickstart prints")
	if ok {
		_, block, ok = strings.Cut(block, "```\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```\n")
	}
	if !ok {
		t.Fatal("README.md: no block after \"The quickstart prints\"")
	}
	if block != want.String() {
		t.Errorf("README.md shows:\n%s\nExample_main checks:\n%s", block, want.String())
	}
}
