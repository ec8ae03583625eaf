package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

// charmFiles are the charm's metadata, copied into every charm directory
// the tests make.
var charmFiles = []string{"metadata.yaml", "charmcraft.yaml"}

// charmDir returns a new charm directory holding the charm's metadata, as
// a deployed charm's does.
func charmDir(t testing.TB) string {
	t.Helper()
	return charmproc.CharmDir(t, charmFiles...)
}

// serverExec is the workload image's web server, as far as the charm runs
// it: --version prints the version.
func serverExec(_ *jujutest.Pebble, req *jujutest.ExecRequest) (*juju.ExecResult, error) {
	if len(req.Command) == 2 && req.Command[0] == serverBin && req.Command[1] == "--version" {
		return &juju.ExecResult{Stdout: []byte("1.4.2\n")}, nil
	}
	return nil, errors.New("cannot find executable " + req.Command[0])
}

// step is one hook of the story: what happens before it, and what the
// unit and its container look like after it.
type step struct {
	hook   string
	before func(*charmproc.Container, *jujutest.Model)
	status jujutest.Status
	check  func(testing.TB, *charmproc.Container, *jujutest.Model)
}

// served checks the server's configuration file and how many times the
// server has started.
func served(port, starts int) func(testing.TB, *charmproc.Container, *jujutest.Model) {
	return func(t testing.TB, w *charmproc.Container, m *jujutest.Model) {
		t.Helper()
		w.CheckServing(t, configFile, service, port, starts)
		if got := w.Pebble.Plan().Checks[check].HTTP.URL; !strings.Contains(got, ":"+strconv.Itoa(port)+"/") {
			t.Errorf("check %s's URL %q, want port %d", check, got, port)
		}
		if m.WorkloadVersion != "1.4.2" {
			t.Errorf("workload version %q, want 1.4.2", m.WorkloadVersion)
		}
	}
}

// setPort changes the config option port.
func setPort(port int) func(*charmproc.Container, *jujutest.Model) {
	return func(_ *charmproc.Container, m *jujutest.Model) { m.Config["port"] = float64(port) }
}

// layersAdded counts the layers the charm had added before the hook.
var layersAdded int

// countLayers records how many layers the charm has added so far.
func countLayers(w *charmproc.Container, _ *jujutest.Model) {
	layersAdded = strings.Count(strings.Join(w.Pebble.Requests(), "\n"), "POST /v1/layers")
}

// noNewLayer checks that the hook added no layer, and that the server is
// still served as before.
func noNewLayer(t testing.TB, w *charmproc.Container, m *jujutest.Model) {
	t.Helper()
	if n := strings.Count(strings.Join(w.Pebble.Requests(), "\n"), "POST /v1/layers"); n != layersAdded {
		t.Errorf("the hook added %d layers, want none: the plan had the service", n-layersAdded)
	}
	served(8080, 3)(t, w, m)
}

// story is a unit's life, hook by hook.
var story = []step{
	{"install", nil, jujutest.Status{Status: "waiting", Message: "Waiting for Pebble in the workload container"}, nil},
	{"workload-pebble-ready", func(w *charmproc.Container, _ *jujutest.Model) { w.Up() }, jujutest.Status{Status: "active"}, served(8080, 1)},
	{"update-status", nil, jujutest.Status{Status: "active"}, served(8080, 1)},
	{"config-changed", setPort(9090), jujutest.Status{Status: "active"}, served(9090, 2)},
	{"config-changed", setPort(70000), jujutest.Status{Status: "blocked", Message: "Config item 'port' must be a port number, not 70000"}, served(9090, 2)},
	{"config-changed", setPort(8080), jujutest.Status{Status: "active"}, served(8080, 3)},
	// Every handler runs again after upgrade-charm: the plan already has
	// the server's service, so workload adds no layer.
	{"upgrade-charm", countLayers, jujutest.Status{Status: "active"}, noNewLayer},
	{"workload-pebble-check-failed", func(w *charmproc.Container, _ *jujutest.Model) { w.Pebble.SetCheck(check, "down", 3) },
		jujutest.Status{Status: "maintenance", Message: "Check alive is down after 3 failures"}, nil},
	{"workload-pebble-check-recovered", func(w *charmproc.Container, _ *jujutest.Model) { w.Pebble.SetCheck(check, "up", 0) },
		jujutest.Status{Status: "active"}, nil},
	// The container restarts: its new Pebble has none of the charm's
	// file, layer and service.
	{"workload-pebble-ready", func(w *charmproc.Container, _ *jujutest.Model) { w.Restart() }, jujutest.Status{Status: "active"}, served(8080, 1)},
	{"update-status", func(w *charmproc.Container, _ *jujutest.Model) { w.Down() },
		jujutest.Status{Status: "waiting", Message: "Waiting for Pebble in the workload container"}, nil},
}

// hookEnv returns the environment of hook.
func hookEnv(hook string) juju.Env {
	e := juju.Env{Name: hook, Kind: juju.HookKind(hook)}
	if e.Kind.IsWorkload() {
		e.Workload = container
	}
	if strings.HasPrefix(string(e.Kind), "pebble-check-") {
		e.CheckName = check
	}
	return e
}

// TestStory runs the story in process, against the in-memory model and
// the fake Pebble, as ops-scenario runs a charm.
func TestStory(t *testing.T) {
	w := charmproc.NewContainer(t, container)
	w.Exec = serverExec
	h := &jujutest.Harness{Setup: setup, CharmDir: charmDir(t), PebbleDir: w.Dir}
	m := &jujutest.Model{Unit: "webserver/0", Config: map[string]any{"port": 8080.0, "greeting": "hello"}}
	for i, s := range story {
		if s.before != nil {
			s.before(w, m)
		}
		out, err := h.RunEnv(context.Background(), hookEnv(s.hook), m)
		if err != nil {
			t.Fatalf("step %d, %s: %v", i, s.hook, err)
		}
		if out.UnitStatus != s.status {
			t.Errorf("step %d, %s: status %+v, want %+v", i, s.hook, out.UnitStatus, s.status)
		}
		if s.check != nil {
			s.check(t, w, out)
		}
		m = out
	}
}
