package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestREADMEQuickstartExplain runs the quickstart with -store, then the
// command as the README shows it, and checks that the README shows its
// output as it is.
func TestREADMEQuickstartExplain(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmdLine = "go run ./cmd/opbus explain -store /tmp/qs -now 2026-11-30T10:00:00Z WebApp shop/front\n```\n\n```\n"
	_, shown, ok := strings.Cut(string(readme), cmdLine)
	if ok {
		shown, _, ok = strings.Cut(shown, "```\n")
	}
	if !ok {
		t.Fatalf("README.md: no output block after %q", cmdLine)
	}

	dir := t.TempDir()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command runs the quickstart: %v", err)
	}
	quickstart := exec.Command(gobin, "run", ".", "-store", dir)
	quickstart.Dir = "../../examples/quickstart"
	if out, err := quickstart.CombinedOutput(); err != nil {
		t.Fatalf("go run ./examples/quickstart -store %s: %v\n%s", dir, err, out)
	}
	out, errOut, code := command(t, "explain", "-store", dir, "-now", "2026-11-30T10:00:00Z", "WebApp", "shop/front")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != shown {
		t.Errorf("README.md shows:\n%s\nthe command prints:\n%s", shown, out)
	}
}
