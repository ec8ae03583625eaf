// Package charmproc holds what the examples' process-level tests share
// beyond jujutest's [jujutest.DeployCharm], which runs a charm as Juju
// runs it: a build of a charm cached for the whole test process, the
// workload container between hooks, and the formatting of what a hook
// did for the examples' transcripts.
package charmproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// built holds the binaries built in this test process, by name.
var built struct {
	sync.Mutex
	paths map[string]string
	errs  map[string]error
	dirs  []string
}

// Build builds the main package in the working directory (the test's
// package) as name, once per test process, and returns the binary's path.
// It builds as the examples' READMEs build for packing: static, without
// cgo (CGO_ENABLED=0, -trimpath). Call [Cleanup] from TestMain to remove
// it.
func Build(t testing.TB, name string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if p, ok := built.paths[name]; ok {
		return p
	}
	if err, ok := built.errs[name]; ok {
		t.Fatal(err)
	}
	if built.paths == nil {
		built.paths, built.errs = map[string]string{}, map[string]error{}
	}
	dir, err := os.MkdirTemp("", name+"-")
	if err == nil {
		built.dirs = append(built.dirs, dir)
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, name), ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, berr := cmd.CombinedOutput()
		if berr != nil {
			err = fmt.Errorf("charmproc: go build %s: %v\n%s", name, berr, out)
		}
	}
	if err != nil {
		built.errs[name] = err
		t.Fatal(err)
	}
	built.paths[name] = filepath.Join(dir, name)
	return built.paths[name]
}

// Main runs the tests of a package that uses [Build], then removes the
// binaries: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the binaries [Build] built.
func Cleanup() {
	built.Lock()
	defer built.Unlock()
	for _, d := range built.dirs {
		os.RemoveAll(d)
	}
	built.dirs, built.paths, built.errs = nil, nil, nil
}

// CharmDir returns a new charm directory holding copies of the named
// files of the working directory (metadata.yaml, config.yaml,
// charmcraft.yaml: those that exist), as a deployed charm's does.
func CharmDir(t testing.TB, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range files {
		data, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Install puts the executable bin at path as a regular file: a hard link,
// or a copy where bin cannot be linked.
func Install(bin, path string) error {
	if os.Link(bin, path) == nil {
		return nil
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o755)
}

// Status formats a unit status for a transcript: the level in bold, then
// the message.
func Status(s jujutest.Status) string {
	if s.Message == "" {
		return "**" + s.Status + "**"
	}
	return "**" + s.Status + "**: " + s.Message
}

// Calls formats the tool calls of a hook, collapsing repeats: "3: a, b ×2".
func Calls(m *jujutest.Model) string {
	var parts []string
	for i := 0; i < len(m.Calls); {
		j := i
		for j < len(m.Calls) && m.Calls[j].Name == m.Calls[i].Name {
			j++
		}
		p := m.Calls[i].Name
		if j-i > 1 {
			p += fmt.Sprintf(" ×%d", j-i)
		}
		parts = append(parts, p)
		i = j
	}
	return fmt.Sprintf("%d: %s", len(m.Calls), strings.Join(parts, ", "))
}

// Slots reads the unit's stored slots: each handler's status, by slot.
func Slots(t testing.TB, m *jujutest.Model) map[string]jujutest.Status {
	t.Helper()
	var records map[string]struct {
		Slots map[string]struct {
			Level   string `json:"level"`
			Message string `json:"message"`
		} `json:"slots"`
	}
	if err := json.Unmarshal([]byte(m.State[juju.DefaultStateKey]), &records); err != nil {
		t.Fatalf("stored records: %v", err)
	}
	slots := map[string]jujutest.Status{}
	for id, s := range records["unit "+m.Unit].Slots {
		slots[id] = jujutest.Status{Status: s.Level, Message: s.Message}
	}
	return slots
}

// SlotLevels formats the levels of the unit's stored slots, in slot-name
// order: "config: active, workload: waiting".
func SlotLevels(t testing.TB, m *jujutest.Model) string {
	t.Helper()
	slots := Slots(t, m)
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(slots)) {
		parts = append(parts, id+": "+slots[id].Status)
	}
	return strings.Join(parts, ", ")
}

// Transcript compares text with the file name in the working directory,
// or writes it there when the variable WriteEnv is set; it fails the test
// when they differ, saying how to regenerate the file with test.
func Transcript(t testing.TB, name, text, test string) {
	t.Helper()
	if os.Getenv(WriteEnv) != "" {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(name)
	if err != nil || string(want) != text {
		t.Errorf("%s is not what the charm does now (%v); regenerate it with %s=1 go test -run %s", name, err, WriteEnv, test)
	}
}

// WriteEnv names the variable that makes [Transcript] write the file
// instead of comparing it.
const WriteEnv = "OPBUS_WRITE_TRANSCRIPT"
