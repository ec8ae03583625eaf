package main

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// built is the charm's binary, built once per test process.
var built struct {
	sync.Once
	dir string
	err error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// charmBinary builds the charm with the go command and returns its path.
func charmBinary(t testing.TB) string {
	t.Helper()
	built.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "webserver-"); built.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(built.dir, "webserver"), ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "webserver")
}

// TestStoryAsProcesses runs the story as Juju runs a charm: every hook a
// new process of the dispatch script in a charm directory as charmcraft
// packs it, with the hook's environment, the fake hook tools alone in
// PATH, and the workload container's fake Pebble listening where
// OPBUS_PEBBLE_DIR says. After each hook, as Juju does, the hook's
// state-set is applied if the process exited 0 and dropped otherwise.
func TestStoryAsProcesses(t *testing.T) {
	dir := charmDir(t)
	script, err := os.ReadFile("dispatch")
	if err != nil {
		t.Fatal(err)
	}
	modelFile := filepath.Join(t.TempDir(), "model.json")
	err = errors.Join(
		os.WriteFile(filepath.Join(dir, "dispatch"), script, 0o755),
		os.Mkdir(filepath.Join(dir, "bin"), 0o755),
		os.Symlink(charmBinary(t), filepath.Join(dir, "bin", "webserver")),
		jujutest.WriteModel(modelFile, &jujutest.Model{Unit: "webserver/0", Config: map[string]any{"port": 8080.0, "greeting": "hello"}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	tools := jujutest.InstallTools(t)
	w := &world{t: t, dir: jujutest.PebbleDir(t)}
	for i, s := range story {
		err := jujutest.UpdateModel(modelFile, func(m *jujutest.Model) error {
			if s.before != nil {
				s.before(w, m)
			}
			m.Calls = nil
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		e := hookEnv(s.hook)
		e.Unit, e.ModelName, e.ModelUUID, e.CharmDir, e.Version = "webserver/0", "web", "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f", dir, "3.6.4"
		env := []string{"PATH=" + tools, jujutest.ModelEnv + "=" + modelFile, juju.PebbleDirEnv + "=" + w.dir}
		vars := e.Vars()
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			env = append(env, k+"="+vars[k])
		}
		cmd := exec.Command(filepath.Join(dir, "dispatch"))
		cmd.Dir, cmd.Env = dir, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		runErr := cmd.Run()
		if runErr != nil {
			jujutest.DiscardFile(modelFile)
			t.Fatalf("step %d, %s: %v\n%s", i, s.hook, runErr, stderr.String())
		}
		if err := jujutest.CommitFile(modelFile); err != nil {
			t.Fatal(err)
		}
		m, err := jujutest.ReadModel(modelFile)
		if err != nil {
			t.Fatal(err)
		}
		if m.UnitStatus != s.status {
			t.Errorf("step %d, %s: status %+v, want %+v", i, s.hook, m.UnitStatus, s.status)
		}
		if s.check != nil {
			s.check(t, w, m)
		}
	}
}
