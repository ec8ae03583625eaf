// Package charmproc runs an example charm as Juju runs it, for the
// examples' process-level tests: the charm built with the go command as
// the examples' READMEs build it, a charm directory as charmcraft packs it
// (a dispatch script and bin/<name>, or the binary as dispatch, and the
// metadata), and every hook a new process of dispatch with Juju's hook
// environment and jujutest's fake hook tools alone in PATH. It also
// formats what a hook did for the examples' transcripts.
package charmproc

import (
	"bytes"
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

// Unit is a deployed unit of a charm: a charm directory as charmcraft
// packs it, the fake hook tools and the model file they read and write.
type Unit struct {
	T testing.TB
	// Dir is the charm directory, JUJU_CHARM_DIR; Model the model file;
	// Tools the fake hook tools' directory.
	Dir, Model, Tools string
	// Env is the part of every hook's environment that does not change:
	// the unit, the model's name and UUID, the Juju version. Deploy sets
	// CharmDir.
	Env juju.Env
	// Extra are more variables for every hook, "NAME=value", such as
	// OPBUS_PEBBLE_DIR.
	Extra []string
}

// Deploy makes a unit of the charm built as name ([Build]) whose model is
// m, in a charm directory holding dispatch and the named metadata files
// of the working directory. env names the unit and its model.
func Deploy(t testing.TB, name string, m *jujutest.Model, env juju.Env, files ...string) *Unit {
	t.Helper()
	u := newUnit(t, m, env, files)
	script, err := os.ReadFile("dispatch")
	if err != nil {
		t.Fatal(err)
	}
	err = errors.Join(
		os.WriteFile(filepath.Join(u.Dir, "dispatch"), script, 0o755),
		os.Mkdir(filepath.Join(u.Dir, "bin"), 0o755),
		os.Symlink(Build(t, name), filepath.Join(u.Dir, "bin", name)),
	)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// DeployBinary is [Deploy] for a charm whose binary is its dispatch: the
// binary built as name is the charm directory's dispatch, a regular file
// as Juju unpacks it, and no script runs before it.
func DeployBinary(t testing.TB, name string, m *jujutest.Model, env juju.Env, files ...string) *Unit {
	t.Helper()
	u := newUnit(t, m, env, files)
	if err := Install(Build(t, name), filepath.Join(u.Dir, "dispatch")); err != nil {
		t.Fatal(err)
	}
	return u
}

// newUnit makes a unit whose charm directory holds the named metadata
// files and whose model is m, without dispatch.
func newUnit(t testing.TB, m *jujutest.Model, env juju.Env, files []string) *Unit {
	t.Helper()
	u := &Unit{T: t, Dir: CharmDir(t, files...), Tools: jujutest.InstallTools(t), Env: env}
	u.Env.CharmDir = u.Dir
	u.Model = filepath.Join(t.TempDir(), "model.json")
	if err := jujutest.WriteModel(u.Model, m); err != nil {
		t.Fatal(err)
	}
	return u
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

// Result is what one hook did.
type Result struct {
	Exit   int
	Stderr string
	// Model is the model after the hook's writes were committed (exit 0)
	// or discarded.
	Model *jujutest.Model
}

// Hook runs one hook as Juju does: a new process of dispatch, in the
// charm directory, with the hook's environment and the fake tools
// alone in PATH. Then, as Juju does, it applies the hook's state-set,
// relation-set and secret changes if the process exited 0 and drops them
// otherwise. change, if not nil, first changes the model (what happened
// before the hook); the model's call log is cleared so that it holds
// this hook's calls.
func (u *Unit) Hook(e juju.Env, change func(*jujutest.Model)) Result {
	u.T.Helper()
	u.Prepare(change)
	return u.Run(u.Command(e))
}

// Prepare changes the model with change, if not nil, and clears its call
// log, before a hook.
func (u *Unit) Prepare(change func(*jujutest.Model)) {
	u.T.Helper()
	err := jujutest.UpdateModel(u.Model, func(m *jujutest.Model) error {
		if change != nil {
			change(m)
		}
		m.Calls = nil
		return nil
	})
	if err != nil {
		u.T.Fatal(err)
	}
}

// Run runs cmd, a hook's process such as [Unit.Command] returns, and then
// applies the hook's writes if it exited 0 and drops them otherwise, as
// Juju does.
func (u *Unit) Run(cmd *exec.Cmd) Result {
	u.T.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			u.T.Fatal(err)
		}
		code = ee.ExitCode()
	}
	var err error
	if code == 0 {
		err = jujutest.CommitFile(u.Model)
	} else {
		err = jujutest.DiscardFile(u.Model)
	}
	if err != nil {
		u.T.Fatal(err)
	}
	m, err := jujutest.ReadModel(u.Model)
	if err != nil {
		u.T.Fatal(err)
	}
	return Result{Exit: code, Stderr: stderr.String(), Model: m}
}

// Command returns the process Juju would start for the hook e, whose
// unit, model, charm directory and version come from u.Env.
func (u *Unit) Command(e juju.Env) *exec.Cmd {
	e.Unit, e.ModelName, e.ModelUUID = u.Env.Unit, u.Env.ModelName, u.Env.ModelUUID
	e.CharmDir, e.Version = u.Env.CharmDir, u.Env.Version
	env := append([]string{"PATH=" + u.Tools, jujutest.ModelEnv + "=" + u.Model}, u.Extra...)
	vars := e.Vars()
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	cmd := exec.Command(filepath.Join(u.Dir, "dispatch"))
	cmd.Dir, cmd.Env = u.Dir, env
	return cmd
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
