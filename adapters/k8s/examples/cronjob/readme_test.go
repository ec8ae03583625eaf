package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmeSection is the heading of the README's section that quotes this
// example.
const readmeSection = "#### The CronJob tutorial side by side: `adapters/k8s/examples/cronjob`"

// TestReadmeQuotesSource: every Go block of the README's CronJob section
// is a verbatim, contiguous part of one of this example's Go files, so the
// guide shows the code its tests run.
func TestReadmeQuotesSource(t *testing.T) {
	readme, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), readmeSection+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", readmeSection)
	}
	if end := strings.Index(section, "\n#"); end >= 0 {
		section = section[:end]
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, string(b))
	}
	blocks := goBlocks(section)
	if len(blocks) < 6 {
		t.Fatalf("the README's CronJob section has %d Go blocks, want the owned Jobs, status, RequeueAfter and Ginkgo quotes (6 or more)", len(blocks))
	}
	for _, b := range blocks {
		found := false
		for _, src := range sources {
			found = found || strings.Contains(src, b)
		}
		if !found {
			t.Errorf("the README quotes code that no Go file of the example holds as written:\n%s", b)
		}
	}
}

// goBlocks returns the contents of the ```go blocks of md.
func goBlocks(md string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(md, "```go\n")
		if !ok {
			return out
		}
		block, after, ok := strings.Cut(rest, "```")
		if !ok {
			return out
		}
		out = append(out, block)
		md = after
	}
}
