package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opbus/opbus/internal/charmproc"
)

// TestDispatchIsTheBinary checks that the charm's dispatch is the Go
// binary itself, with no shell in between, and that it runs a hook both
// as Juju 2.8 and later run it (dispatch, with JUJU_DISPATCH_PATH) and as
// older Juju did (hooks/<name>, a link to dispatch, without
// JUJU_DISPATCH_PATH), which the shell script it replaces also handled.
func TestDispatchIsTheBinary(t *testing.T) {
	u := deploy(t, installed())
	head := make([]byte, 4)
	f, err := os.Open(filepath.Join(u.Dir, "dispatch"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Read(head)
	f.Close()
	if err != nil || string(head) != "\x7fELF" {
		t.Fatalf("dispatch starts with %q (%v), want an ELF executable", head, err)
	}

	// Juju 2.8 and later.
	r := u.Hook(hookEnv("install"), nil)
	if want := story[0].want; r.Exit != 0 || r.Model.UnitStatus != want {
		t.Fatalf("dispatch with JUJU_DISPATCH_PATH=hooks/install: exit %d, status %q, want 0 and %q: %s", r.Exit, r.Model.UnitStatus, want, r.Stderr)
	}

	// Before Juju 2.8: hooks/config-changed links to dispatch and names
	// the hook.
	if err := os.Mkdir(filepath.Join(u.Dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../dispatch", filepath.Join(u.Dir, "hooks", "config-changed")); err != nil {
		t.Fatal(err)
	}
	cmd := withoutDispatchPath(u.Command(hookEnv("config-changed")))
	cmd.Path = filepath.Join(u.Dir, "hooks", "config-changed")
	cmd.Args = []string{cmd.Path}
	u.Prepare(setKind("ingress"))
	r = u.Run(cmd)
	if want := story[1].want; r.Exit != 0 || r.Model.UnitStatus != want {
		t.Fatalf("hooks/config-changed without JUJU_DISPATCH_PATH: exit %d, status %q, want 0 and %q: %s", r.Exit, r.Model.UnitStatus, want, r.Stderr)
	}

	// dispatch itself names no hook: without JUJU_DISPATCH_PATH it fails
	// and changes nothing.
	stored := r.Model.State
	u.Prepare(nil)
	r = u.Run(withoutDispatchPath(u.Command(hookEnv("update-status"))))
	if r.Exit == 0 || !strings.Contains(r.Stderr, "JUJU_DISPATCH_PATH is not set") {
		t.Fatalf("dispatch without JUJU_DISPATCH_PATH: exit %d, stderr %q: want a failure naming JUJU_DISPATCH_PATH", r.Exit, r.Stderr)
	}
	if len(r.Model.Calls) != 0 || !maps.Equal(r.Model.State, stored) {
		t.Errorf("dispatch without JUJU_DISPATCH_PATH called %s", charmproc.Calls(r.Model))
	}
}

// withoutDispatchPath removes JUJU_DISPATCH_PATH from cmd's environment.
func withoutDispatchPath(cmd *exec.Cmd) *exec.Cmd {
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "JUJU_DISPATCH_PATH=") })
	return cmd
}
