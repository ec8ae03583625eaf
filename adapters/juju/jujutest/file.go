package jujutest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/internal/charmmeta"
)

// ModelEnv is the environment variable that names the model file the hook
// tools built by [InstallTools] read and write.
const ModelEnv = "OPBUS_JUJU_MODEL"

// ReadModel reads a model from the JSON file at path.
func ReadModel(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jujutest: reading model: %w", err)
	}
	m := new(Model)
	if err := decodeModel(data, m); err != nil {
		return nil, fmt.Errorf("jujutest: reading model %s: %w", path, err)
	}
	return m, nil
}

// WriteModel writes m to the JSON file at path, replacing it in one step
// while holding the file's lock, so that tools running at the same time see
// either the old model or the new one.
func WriteModel(path string, m *Model) error {
	unlock, err := lockFile(path)
	if err != nil {
		return err
	}
	defer unlock()
	return writeModel(path, m)
}

// UpdateModel reads the model at path, calls fn with it and writes it back
// unless fn returns an error, holding the file's lock throughout so that
// concurrent updates (hook tools run in parallel) are applied one by one.
func UpdateModel(path string, fn func(*Model) error) error {
	unlock, err := lockFile(path)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := ReadModel(path)
	if err != nil {
		return err
	}
	if err := fn(m); err != nil {
		return err
	}
	return writeModel(path, m)
}

// CommitFile applies the staged writes in the model file, which is what a
// harness does after the hook process exits 0.
func CommitFile(path string) error {
	return UpdateModel(path, func(m *Model) error { m.Commit(); return nil })
}

// DiscardFile drops the staged writes in the model file, which is what a
// harness does after the hook process fails.
func DiscardFile(path string) error {
	return UpdateModel(path, func(m *Model) error { m.Discard(); return nil })
}

// writeModel writes m to a temporary file beside path and renames it over
// path. The caller holds the lock.
func writeModel(path string, m *Model) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("jujutest: encoding model: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("jujutest: writing model: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("jujutest: writing model: %w", err)
	}
	return nil
}

// ToolMain is the body of the hooktools program: it runs the hook tool
// named by the base name of args[0] (or by args[1] when args[0] is
// "hooktools") with the remaining arguments against the model file named
// by the ModelEnv variable, prints the tool's output, saves the model
// (staged writes stay staged) and returns the tool's exit code. Standard
// input is read only when the tool is given "--file -".
func ToolMain(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "ERROR jujutest: no program name")
		return 2
	}
	name, rest := filepath.Base(args[0]), args[1:]
	if name == "hooktools" {
		if len(rest) == 0 {
			fmt.Fprintln(stderr, "usage: hooktools <tool> [args…], or run through a symlink named after the tool")
			return 2
		}
		name, rest = rest[0], rest[1:]
	}
	if !IsTool(name) {
		fmt.Fprintf(stderr, "ERROR jujutest: unknown hook tool %q\n", name)
		return 127
	}
	path := getenv(ModelEnv)
	if path == "" {
		fmt.Fprintf(stderr, "ERROR jujutest: %s is not set\n", ModelEnv)
		return 1
	}
	var in []byte
	if readsStdin(rest) {
		var err error
		if in, err = io.ReadAll(stdin); err != nil {
			fmt.Fprintf(stderr, "ERROR jujutest: reading stdin: %v\n", err)
			return 1
		}
	}
	var out, errOut []byte
	code := 0
	var charm *charmmeta.Charm
	if dir := getenv("JUJU_CHARM_DIR"); dir != "" {
		var err error
		if charm, err = charmmeta.Read(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "ERROR jujutest: reading the charm's metadata: %v\n", err)
			return 1
		}
	}
	err := UpdateModel(path, func(m *Model) error {
		m.charm = charm
		restricted, hookRelation := m.Restricted, m.HookRelation
		m.Restricted, m.HookRelation = hookContext(getenv, m)
		out, errOut, code = m.Exec(name, rest, in)
		m.Restricted, m.HookRelation = restricted, hookRelation
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "ERROR %v\n", err)
		return 1
	}
	stdout.Write(out)
	stderr.Write(errOut)
	return code
}

// hookContext returns what the tools take from the hook's context, read
// from the hook's environment as Juju's tools read it: the restricted
// context of collect-metrics and meter-status-changed (JUJU_DISPATCH_PATH)
// and the relation of a relation hook (JUJU_RELATION_ID). What the model
// sets itself is kept.
func hookContext(getenv func(string) string, m *Model) (juju.Kind, *int) {
	restricted, rel := m.Restricted, m.HookRelation
	if name, ok := strings.CutPrefix(getenv("JUJU_DISPATCH_PATH"), "hooks/"); ok && restricted == "" {
		if k := juju.HookKind(name); k.IsRestricted() {
			restricted = k
		}
	}
	if id, err := juju.ParseRelationID(getenv("JUJU_RELATION_ID")); err == nil && rel == nil {
		rel = &id.ID
	}
	return restricted, rel
}

// readsStdin reports whether args ask the tool to read standard input.
func readsStdin(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--file=-" || a == "-file=-":
			return true
		case (a == "--file" || a == "-file") && i+1 < len(args) && args[i+1] == "-":
			return true
		}
	}
	return false
}

// decodeModel decodes a model's JSON into m keeping numbers exact: config
// values and action parameters are [json.Number]s, which the tools print
// as they were written, so an integer above 2^53 survives a copy.
func decodeModel(data []byte, m *Model) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(m)
}
