package main

import (
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

func TestMain(m *testing.M) { charmproc.Main(m) }

// TestStoryAsProcesses runs the story as Juju runs a charm: every hook a
// new process of the dispatch script in a charm directory as charmcraft
// packs it, with the hook's environment, the fake hook tools alone in
// PATH, and the workload container's fake Pebble listening where
// OPBUS_PEBBLE_DIR says. After each hook, as Juju does, the hook's
// state-set is applied if the process exited 0 and dropped otherwise.
func TestStoryAsProcesses(t *testing.T) {
	env := juju.Env{Unit: "webserver/0", ModelName: "web", ModelUUID: "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f", Version: "3.6.4"}
	u := jujutest.DeployCharm(t, jujutest.BuildCharm(t, ""), &jujutest.Model{Unit: "webserver/0", Config: map[string]any{"port": 8080.0, "greeting": "hello"}}, env,
		&jujutest.DeployOptions{Files: charmFiles, Dispatch: "dispatch", BinName: "webserver"})
	w := charmproc.NewContainer(t, container)
	w.Exec = serverExec
	u.Extra = []string{juju.PebbleDirEnv + "=" + w.Dir}
	for i, s := range story {
		r := u.Hook(hookEnv(s.hook), func(m *jujutest.Model) {
			if s.before != nil {
				s.before(w, m)
			}
		})
		if r.Exit != 0 {
			t.Fatalf("step %d, %s: exit %d\n%s", i, s.hook, r.Exit, r.Stderr)
		}
		if r.Model.UnitStatus != s.status {
			t.Errorf("step %d, %s: status %+v, want %+v", i, s.hook, r.Model.UnitStatus, s.status)
		}
		if s.check != nil {
			s.check(t, w, r.Model)
		}
	}
}
