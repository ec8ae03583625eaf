package jujutest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
)

// BuildCharm builds the charm's main package in the directory pkg (the
// working directory, which is the test's package, when empty) as
// charmcraft packs a Go charm: a static binary (CGO_ENABLED=0,
// -trimpath). The binary is in a directory of the test's, removed when
// it ends; the go command's build cache makes later builds of the same
// package quick.
func BuildCharm(t testing.TB, pkg string) string {
	t.Helper()
	if pkg == "" {
		pkg = "."
	}
	out := filepath.Join(t.TempDir(), "charm")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("jujutest: go build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// CharmUnit is a unit of a charm deployed to run as Juju runs it: a
// charm directory as charmcraft packs it, the fake hook tools
// ([InstallTools]) and the file of the unit's [Model] that they read and
// write. Each hook is a new process of the charm directory's dispatch
// with the hook's environment and the fake tools alone in PATH.
type CharmUnit struct {
	// Dir is the charm directory (JUJU_CHARM_DIR), Model the path of the
	// model file and Tools the fake hook tools' directory.
	Dir, Model, Tools string
	// Env is the part of every hook's environment that does not change:
	// the unit, the model's name and UUID, the Juju version; CharmDir is
	// Dir.
	Env juju.Env
	// Extra are more variables for every hook ("NAME=value"), such as
	// OPBUS_PEBBLE_DIR for a fake Pebble.
	Extra []string

	t testing.TB
}

// DeployOptions configures [DeployCharm]. Nil options, and every zero
// field, mean a charm whose binary is its dispatch, with the metadata
// files of the working directory.
type DeployOptions struct {
	// Files are the paths of the charm's files to copy into the charm
	// directory under their base names. Nil means those of metadata.yaml,
	// config.yaml, actions.yaml and charmcraft.yaml in the working
	// directory that exist.
	Files []string
	// Dispatch is the path of a dispatch script to install as the charm
	// directory's dispatch, with the binary at bin/<BinName>; empty makes
	// the binary itself the dispatch, as Juju runs a charm packed that way.
	Dispatch string
	// BinName names the binary under bin/ when Dispatch is set; empty
	// means "charm".
	BinName string
}

// DeployCharm deploys the charm binary (as [BuildCharm] builds it) as a
// unit whose model is m and whose hooks run with env's unit, model names
// and Juju version (Unit defaults to m.Unit, Version to 3.6.4).
func DeployCharm(t testing.TB, binary string, m *Model, env juju.Env, opts *DeployOptions) *CharmUnit {
	t.Helper()
	if opts == nil {
		opts = &DeployOptions{}
	}
	u := &CharmUnit{t: t, Dir: t.TempDir(), Tools: InstallTools(t), Env: env}
	u.Env.CharmDir = u.Dir
	if u.Env.Unit == "" {
		u.Env.Unit = m.Unit
	}
	if u.Env.Version == "" {
		u.Env.Version = "3.6.4"
	}
	files := opts.Files
	if files == nil {
		for _, name := range []string{"metadata.yaml", "config.yaml", "actions.yaml", "charmcraft.yaml"} {
			if _, err := os.Stat(name); err == nil {
				files = append(files, name)
			}
		}
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, copyFile(f, filepath.Join(u.Dir, filepath.Base(f)), 0o644))
	}
	if opts.Dispatch == "" {
		errs = append(errs, linkOrCopy(binary, filepath.Join(u.Dir, "dispatch")))
	} else {
		bin := opts.BinName
		if bin == "" {
			bin = "charm"
		}
		errs = append(errs,
			copyFile(opts.Dispatch, filepath.Join(u.Dir, "dispatch"), 0o755),
			os.Mkdir(filepath.Join(u.Dir, "bin"), 0o755),
			linkOrCopy(binary, filepath.Join(u.Dir, "bin", bin)))
	}
	u.Model = filepath.Join(t.TempDir(), "model.json")
	errs = append(errs, WriteModel(u.Model, m))
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("jujutest: deploying the charm: %v", err)
	}
	return u
}

// copyFile copies src to dst with mode perm.
func copyFile(src, dst string, perm os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, perm)
}

// linkOrCopy puts the executable bin at path as a regular file: a hard
// link, or a copy where bin cannot be linked.
func linkOrCopy(bin, path string) error {
	if os.Link(bin, path) == nil {
		return nil
	}
	return copyFile(bin, path, 0o755)
}

// HookResult is what one hook run by a [CharmUnit] did.
type HookResult struct {
	// Exit is the process's exit code; Stderr its standard error.
	Exit   int
	Stderr string
	// Model is the model after the hook's writes were committed (exit
	// 0) or discarded.
	Model *Model
	// Refused is `juju run`'s error when Juju would not run the action
	// (an action the charm does not declare, parameters its schema
	// refuses): then no process ran.
	Refused error
}

// Hook runs one hook or action as Juju does. e names it and gives the
// variables of its kind, as for [Harness.RunEnv] (its Kind defaults to
// the one its name has, and an action's ActionName to its Name); change,
// if not nil, first
// changes the model (what happened before the hook) and the model's call
// log is cleared; then a new process of dispatch runs in the charm
// directory with the hook's environment, and the hook's state-set,
// relation-set and secret changes are applied if it exited 0 and dropped
// otherwise. A failed hook (not an action) sets Model.HookError, and one
// that succeeds clears it. An action's parameters get the defaults of
// its schema and are validated first, as [Harness.RunEnv] does.
func (u *CharmUnit) Hook(e juju.Env, change func(*Model)) HookResult {
	u.t.Helper()
	if e.Kind == juju.KindUnknown && e.DispatchPath == "" {
		e.Kind = juju.HookKind(e.Name)
	}
	if e.Kind == juju.KindAction && e.ActionName == "" {
		e.ActionName = e.Name
	}
	var refused error
	u.Prepare(func(m *Model) {
		if change != nil {
			change(m)
		}
		if e.Kind != juju.KindAction {
			return
		}
		if m.Action == nil || m.Action.Name != e.Name {
			m.Action = &Action{Name: e.Name}
		}
		ch, err := readCharm(u.Dir)
		if err != nil {
			refused = err
			return
		}
		m.charm = ch
		refused = m.queueAction(u.Env.Version)
	})
	if refused != nil {
		m, err := ReadModel(u.Model)
		if err != nil {
			u.t.Fatal(err)
		}
		return HookResult{Exit: -1, Model: m, Refused: refused}
	}
	r := u.Run(u.Command(e))
	if e.Kind != juju.KindAction {
		err := UpdateModel(u.Model, func(m *Model) error {
			m.HookError = ""
			if r.Exit != 0 {
				m.HookError = fmt.Sprintf("hook failed: %q", e.Name)
			}
			return nil
		})
		if err != nil {
			u.t.Fatal(err)
		}
		r.Model.HookError = ""
		if r.Exit != 0 {
			r.Model.HookError = fmt.Sprintf("hook failed: %q", e.Name)
		}
	}
	return r
}

// Prepare changes the model with change, if not nil, and clears its call
// log, before a hook.
func (u *CharmUnit) Prepare(change func(*Model)) {
	u.t.Helper()
	err := UpdateModel(u.Model, func(m *Model) error {
		if change != nil {
			change(m)
		}
		m.Calls = nil
		return nil
	})
	if err != nil {
		u.t.Fatal(err)
	}
}

// Run runs cmd, a hook's process as [CharmUnit.Command] returns it, then
// applies the hook's writes if it exited 0 and drops them otherwise, as
// Juju does.
func (u *CharmUnit) Run(cmd *exec.Cmd) HookResult {
	u.t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			u.t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	var err error
	if code == 0 {
		err = CommitFile(u.Model)
	} else {
		err = DiscardFile(u.Model)
	}
	if err != nil {
		u.t.Fatal(err)
	}
	m, err := ReadModel(u.Model)
	if err != nil {
		u.t.Fatal(err)
	}
	return HookResult{Exit: code, Stderr: stderr.String(), Model: m}
}

// Command returns the process Juju would start for the hook e, whose
// unit, model, charm directory and version come from u.Env.
func (u *CharmUnit) Command(e juju.Env) *exec.Cmd {
	e.Unit, e.ModelName, e.ModelUUID = u.Env.Unit, u.Env.ModelName, u.Env.ModelUUID
	e.CharmDir, e.Version = u.Env.CharmDir, u.Env.Version
	env := append([]string{"PATH=" + u.Tools, ModelEnv + "=" + u.Model}, u.Extra...)
	vars := e.Vars()
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	cmd := exec.Command(filepath.Join(u.Dir, "dispatch"))
	cmd.Dir, cmd.Env = u.Dir, env
	return cmd
}
