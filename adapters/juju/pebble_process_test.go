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

// TestPebbleCharmAsProcesses runs a charm as Juju runs it, each hook a
// process of the test binary as opbus-pebble-charm (pebble_charm_test.go)
// against the fake hook tools and the workload container's fake Pebble:
// a config value holding what YAML refuses raw reaches the plan unchanged
// (J7); a restarted container gets its layer and service again at
// workload-pebble-ready (J2); a Pebble that stops answering fails the hook
// after OPBUS_PEBBLE_TIMEOUT, naming the call, and the retry recovers (J4).
func TestPebbleCharmAsProcesses(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	charmDir, pebbleDir := t.TempDir(), jujutest.PebbleDir(t)
	bin := filepath.Join(charmDir, "bin", "opbus-pebble-charm")
	model := filepath.Join(t.TempDir(), "model.json")
	errs := errors.Join(
		os.Mkdir(filepath.Dir(bin), 0o755), os.Symlink(exe, bin),
		os.WriteFile(filepath.Join(charmDir, "metadata.yaml"), []byte("name: app\ncontainers:\n  workload:\n    resource: image\n"), 0o644),
		os.WriteFile(filepath.Join(charmDir, "config.yaml"), []byte("options:\n  motd:\n    type: string\n"), 0o644),
		jujutest.WriteModel(model, &jujutest.Model{Unit: "app/0", Config: map[string]any{"motd": "a\x7fb\u0085c"}}),
	)
	if errs != nil {
		t.Fatal(errs)
	}
	tools := jujutest.InstallTools(t)
	p := jujutest.StartPebble(t, pebbleDir, "workload")
	hook := func(name, timeout string) (int, string) {
		t.Helper()
		e := juju.Env{Name: name, Kind: juju.HookKind(name), Unit: "app/0", ModelName: "test", CharmDir: charmDir}
		if e.Kind.IsWorkload() {
			e.Workload = "workload"
		}
		env := []string{"PATH=" + tools, jujutest.ModelEnv + "=" + model, juju.PebbleDirEnv + "=" + pebbleDir, "GORACE=atexit_sleep_ms=0"}
		if timeout != "" {
			env = append(env, juju.PebbleTimeoutEnv+"="+timeout)
		}
		vars := e.Vars()
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			env = append(env, k+"="+vars[k])
		}
		cmd := exec.Command(bin)
		cmd.Dir, cmd.Env = charmDir, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		if code == 0 {
			err = jujutest.CommitFile(model)
		} else {
			err = jujutest.DiscardFile(model)
		}
		if err != nil {
			t.Fatal(err)
		}
		return code, stderr.String()
	}
	running := func(step string) {
		t.Helper()
		app := p.Plan().Services["app"]
		if app == nil || app.Override != "replace" || app.Environment["MOTD"] != "a\x7fb\u0085c" {
			t.Errorf("%s: the plan's app: got %+v, want MOTD %q", step, app, "a\x7fb\u0085c")
		}
		if svcs := p.Services(); len(svcs) != 1 || svcs[0].Current != "active" {
			t.Errorf("%s: services %+v, want app active", step, svcs)
		}
	}
	if code, stderr := hook("workload-pebble-ready", ""); code != 0 {
		t.Fatalf("workload-pebble-ready: exit %d: %s", code, stderr)
	}
	running("workload-pebble-ready")

	p.Restart()
	if code, stderr := hook("workload-pebble-ready", ""); code != 0 {
		t.Fatalf("workload-pebble-ready after a restart: exit %d: %s", code, stderr)
	}
	running("workload-pebble-ready after a restart")

	p.Restart()
	p.StopAnswering("GET /v1/changes")
	code, stderr := hook("workload-pebble-ready", "200ms")
	p.Answer()
	want := `container "workload" (socket ` + p.Socket + `): replan: pebble did not answer within 200ms`
	if code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("a Pebble that stops answering: exit %d, stderr %q; want a failure with %s", code, stderr, want)
	}
	if code, stderr := hook("workload-pebble-ready", ""); code != 0 {
		t.Fatalf("the retried hook: exit %d: %s", code, stderr)
	}
	running("the retried hook")
}
