package juju_test

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// charmUnit is a charm directory whose bin/opbus-charm is the test binary,
// which runs as a charm under that name (see TestMain), and the model its
// fake hook tools read and write.
type charmUnit struct {
	dir, model, tools string
}

// newCharmUnit makes a charm directory holding the given files.
func newCharmUnit(t *testing.T, files map[string]string) *charmUnit {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	u := &charmUnit{dir: t.TempDir(), model: filepath.Join(t.TempDir(), "model.json"), tools: jujutest.InstallTools(t)}
	errs := []error{
		os.Mkdir(filepath.Join(u.dir, "bin"), 0o755),
		os.Symlink(exe, filepath.Join(u.dir, "bin", "opbus-charm")),
		jujutest.WriteModel(u.model, newModel()),
	}
	for name, data := range files {
		errs = append(errs, os.WriteFile(filepath.Join(u.dir, name), []byte(data), 0o644))
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return u
}

// install runs the install hook as a process of bin/opbus-charm started
// by path from the working directory wd, with JUJU_CHARM_DIR set to
// charmDir ("" for none) and a handler subscribed to fields. It returns
// the exit code and standard error.
func (u *charmUnit) install(t *testing.T, wd, charmDir string, fields ...string) (int, string) {
	t.Helper()
	e := juju.Env{Name: "install", Kind: juju.HookKind("install"), Unit: "web/0", ModelName: "test", CharmDir: charmDir}
	env := []string{"PATH=" + u.tools, jujutest.ModelEnv + "=" + u.model, "OPBUS_TEST_FIELDS=" + strings.Join(fields, " "), "GORACE=atexit_sleep_ms=0"}
	vars := e.Vars()
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	cmd := exec.Command(filepath.Join(u.dir, "bin", "opbus-charm"))
	cmd.Dir, cmd.Env = wd, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatal(err)
	return 0, ""
}

// TestCharmDirFoundWithoutJujuCharmDir runs a charm as a process, as Juju
// runs it, and checks that its misspelt endpoints and config options fail
// the hook wherever its metadata can be found: in JUJU_CHARM_DIR, in the
// working directory (Juju runs hooks in the charm directory), or above the
// program (bin/<charm>), and that they pass unchecked only where it
// cannot.
func TestCharmDirFoundWithoutJujuCharmDir(t *testing.T) {
	meta := "name: web\nrequires:\n  db:\n    interface: pgsql\npeers:\n  peers:\n    interface: web-peers\n"
	config := "options:\n  port:\n    type: int\n    default: 8080\n    description: |\n      the port: where it listens\n  password:\n    type: string\n"
	u := newCharmUnit(t, map[string]string{"metadata.yaml": meta, "config.yaml": config})
	elsewhere := t.TempDir()
	endpoint := `juju: handler "h" subscribes to relations.dbb, but the charm has no endpoint "dbb" (did you mean relations.db? its endpoints are db, peers)`
	option := `juju: handler "h" subscribes to config.prot, but the charm has no config option "prot" (did you mean config.port? its options are password, port)`
	for _, tc := range []struct {
		name         string
		wd, charmDir string
		fields       []string
		code         int
		want         string
	}{
		{"JUJU_CHARM_DIR", elsewhere, u.dir, []string{"relations.dbb"}, 1, endpoint},
		{"the working directory", u.dir, "", []string{"relations.dbb"}, 1, endpoint},
		{"the working directory, config", u.dir, "", []string{"config.prot"}, 1, option},
		{"above the program", elsewhere, "", []string{"relations.dbb"}, 1, endpoint},
		{"above the program, config", elsewhere, "", []string{"config.prot"}, 1, option},
		{"valid fields", u.dir, "", []string{"config.port", "relations.db", "relations.peers[*].app-data"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := u.install(t, tc.wd, tc.charmDir, tc.fields...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
	t.Run("no metadata to be found", func(t *testing.T) {
		bare := newCharmUnit(t, nil)
		code, stderr := bare.install(t, elsewhere, "", "relations.dbb", "config.prot")
		if code != 0 {
			t.Errorf("exit %d, stderr %q; want 0: with no metadata found, the names cannot be checked", code, stderr)
		}
	})
}
