package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	charmproc.Cleanup()
	if dynamic.dir != "" {
		os.RemoveAll(dynamic.dir)
	}
	os.Exit(code)
}

// unitEnv names the unit and its model in every hook.
var unitEnv = juju.Env{Unit: "istio-gateway/0", ModelName: "kubeflow", ModelUUID: "1f3a5e2c-7b9d-4c1e-8f2a-6d4b3c2a1e0f", Version: "3.6.4"}

// deploy makes a unit of the charm whose model is m: a charm directory as
// charmcraft packs it (dispatch, which is the charm's binary, and the
// metadata), the fake hook tools and the model file they read and write.
func deploy(t testing.TB, m *jujutest.Model) *jujutest.CharmUnit {
	t.Helper()
	return jujutest.DeployCharm(t, charmproc.Build(t, "istio-gateway"), m, unitEnv, &jujutest.DeployOptions{Files: charmFiles})
}

// pilotRelation is the istio-pilot relation's context in its hooks.
var pilotRelation = juju.Env{Relation: &juju.RelationID{Endpoint: "istio-pilot", ID: 2}, RemoteApp: "istio-pilot", RemoteUnit: "istio-pilot/0"}

// hookEnv returns the environment of hook, in the istio-pilot relation's
// context for its relation hooks.
func hookEnv(hook string) juju.Env {
	e := juju.Env{Name: hook, Kind: juju.HookKind(hook)}
	if e.Kind.IsRelation() {
		e.Relation, e.RemoteApp, e.RemoteUnit = pilotRelation.Relation, pilotRelation.RemoteApp, pilotRelation.RemoteUnit
	}
	return e
}

// step is one hook of a scenario and what happened before it.
type step struct {
	hook   string
	before string // what changed, for the transcript
	change func(*jujutest.Model)
	want   jujutest.Status
}

// installed is the model of the unit before its first hook: the leader,
// with the config item kind unset and no relation.
func installed() *jujutest.Model {
	return &jujutest.Model{Unit: "istio-gateway/0", Leader: true, Config: map[string]any{"kind": ""}}
}

var (
	setKind   = func(kind string) func(*jujutest.Model) { return func(m *jujutest.Model) { m.Config["kind"] = kind } }
	joinPilot = func(m *jujutest.Model) {
		m.Relations = []jujutest.Relation{{ID: 2, Endpoint: "istio-pilot", RemoteApp: "istio-pilot", RemoteUnits: []string{"istio-pilot/0"}}}
	}
	pilotSends = func(m *jujutest.Model) { m.Relations[0].RemoteAppData = maps.Clone(pilotData) }
)

// story is the scenario of the transcript.
var story = []step{
	{"install", "the unit leads; config item kind is unset; no relation", nil,
		jujutest.Status{Status: "blocked", Message: "Config item 'kind' must be set to ingress or egress; Waiting for istio-pilot relation"}},
	{"config-changed", "kind set to ingress", setKind("ingress"),
		jujutest.Status{Status: "blocked", Message: "Waiting for istio-pilot relation"}},
	{"istio-pilot-relation-joined", "istio-pilot/0 joins; the pilot has sent nothing yet", joinPilot,
		jujutest.Status{Status: "waiting", Message: "Waiting for istio-pilot relation data"}},
	{"istio-pilot-relation-changed", "the pilot sends service-name and service-port", pilotSends,
		jujutest.Status{Status: "active"}},
	{"update-status", "nothing", nil,
		jujutest.Status{Status: "active"}},
}

func TestProcessTranscript(t *testing.T) {
	u := deploy(t, installed())
	var b strings.Builder
	b.WriteString(transcriptHead)
	for i, s := range story {
		r := u.Hook(hookEnv(s.hook), s.change)
		if r.Exit != 0 {
			t.Fatalf("%s: exit %d: %s", s.hook, r.Exit, r.Stderr)
		}
		if r.Model.UnitStatus != s.want {
			t.Errorf("%s: status %q, want %q", s.hook, r.Model.UnitStatus, s.want)
		}
		_, err := os.Stat(filepath.Join(u.Dir, "manifest.yaml"))
		if rendered := err == nil; rendered != (i >= 3) {
			t.Errorf("%s: manifest rendered: %v", s.hook, rendered)
		}
		m := r.Model
		if m.CallCount("state-get") != 1 || m.CallCount("state-set") > 1 || m.CallCount("status-set") > 1 {
			t.Errorf("%s: tool calls %s: want one state-get and at most one state-set and status-set", s.hook, charmproc.Calls(m))
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %d | %s | %s | %s |\n", i+1, s.hook, s.before, r.Exit, charmproc.Status(m.UnitStatus), charmproc.SlotLevels(t, m), charmproc.Calls(m))
	}
	last, _ := jujutest.ReadModel(u.Model)
	if n := last.CallCount("state-set") + last.CallCount("status-set"); n != 0 {
		t.Errorf("update-status with nothing changed made %d state-set or status-set calls", n)
	}
	manifest, err := os.ReadFile(filepath.Join(u.Dir, "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("\nThe unit's log (`juju debug-log`), from juju-log:\n\n```\n")
	for _, l := range last.Logs {
		fmt.Fprintf(&b, "%s %s\n", l.Level, l.Message)
	}
	b.WriteString("```\n\nThe stored record after the last hook (`state-get opbus`), one JSON string:\n\n```json\n")
	b.WriteString(last.State[juju.DefaultStateKey])
	b.WriteString("\n```\n\n`manifest.yaml`, rendered in the charm directory at step 4:\n\n```yaml\n")
	b.Write(manifest)
	b.WriteString("```\n")

	got := b.String()
	t.Log("\n" + got)
	charmproc.Transcript(t, "TRANSCRIPT.md", got, "TestProcessTranscript")
}

const transcriptHead = `# istio-gateway: a transcript

Each hook below ran as Juju runs it: a new process of the charm's ` + "`dispatch`" + `
(the charm's Go binary), in the charm directory, with Juju's hook
environment and the fake hook tools of ` + "`jujutest.InstallTools`" + ` (one Go
program reading and writing a model file) alone in PATH. After each process
the harness applies its state-set and relation-set if it exited 0, and drops
them otherwise, as Juju does.
Generated by ` + "`TestProcessTranscript`" + ` (run it with ` + "`OPBUS_WRITE_TRANSCRIPT=1`" + ` to
regenerate); the test fails when this file no longer matches.

"Slots" are the per-handler statuses the charm stores in the unit's state;
the unit status folds them: the highest level wins, and its message joins
the messages of every slot at that level, in slot-name order.

| # | hook | before the hook | exit | unit status | slots | hook tool calls |
|---|------|-----------------|------|-------------|-------|-----------------|
`

// TestProcessFailures checks that a hook whose tool or handler fails
// exits non-zero, leaves the stored record as it was, and that the next
// hook recovers.
func TestProcessFailures(t *testing.T) {
	tests := []struct {
		name   string
		inject func(u *jujutest.CharmUnit, m *jujutest.Model)
		clear  func(u *jujutest.CharmUnit, m *jujutest.Model)
		stderr string
	}{
		{"state-set fails",
			func(_ *jujutest.CharmUnit, m *jujutest.Model) {
				m.Failures = map[string]string{"state-set": "controller unavailable"}
			},
			func(_ *jujutest.CharmUnit, m *jujutest.Model) { m.Failures = nil },
			"state-set exited with code 1: ERROR controller unavailable"},
		{"status-set fails",
			func(_ *jujutest.CharmUnit, m *jujutest.Model) {
				m.Failures = map[string]string{"status-set": "controller unavailable"}
			},
			func(_ *jujutest.CharmUnit, m *jujutest.Model) { m.Failures = nil },
			"status-set exited with code 1: ERROR controller unavailable"},
		{"a handler fails",
			func(u *jujutest.CharmUnit, m *jujutest.Model) {
				// A directory in the way of the manifest makes writing it fail.
				os.MkdirAll(filepath.Join(u.Dir, "manifest.yaml", "x"), 0o755)
			},
			func(u *jujutest.CharmUnit, m *jujutest.Model) { os.RemoveAll(filepath.Join(u.Dir, "manifest.yaml")) },
			`handler "istio-pilot" on unit istio-gateway/0: writing the manifest`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := installed()
			joinPilot(start)
			pilotSends(start)
			u := deploy(t, start)
			first := u.Hook(hookEnv("install"), nil)
			if first.Exit != 0 {
				t.Fatalf("install: exit %d: %s", first.Exit, first.Stderr)
			}
			stored := first.Model.State

			failed := u.Hook(hookEnv("config-changed"), func(m *jujutest.Model) {
				setKind("ingress")(m)
				tt.inject(u, m)
			})
			if failed.Exit == 0 || !strings.Contains(failed.Stderr, tt.stderr) {
				t.Fatalf("exit %d, stderr %q: want a failure naming %q", failed.Exit, failed.Stderr, tt.stderr)
			}
			if !maps.Equal(failed.Model.State, stored) {
				t.Errorf("the stored record changed:\n%v\nwas\n%v", failed.Model.State, stored)
			}
			if failed.Model.UnitStatus != first.Model.UnitStatus {
				t.Errorf("status %q after the failure, want the previous %q", failed.Model.UnitStatus, first.Model.UnitStatus)
			}

			// Juju retries the hook.
			retry := u.Hook(hookEnv("config-changed"), func(m *jujutest.Model) { tt.clear(u, m) })
			if retry.Exit != 0 {
				t.Fatalf("retry: exit %d: %s", retry.Exit, retry.Stderr)
			}
			if retry.Model.UnitStatus != (jujutest.Status{Status: "active"}) || maps.Equal(retry.Model.State, stored) {
				t.Errorf("retry: status %q, state changed %v", retry.Model.UnitStatus, !maps.Equal(retry.Model.State, stored))
			}
			if _, err := os.Stat(filepath.Join(u.Dir, "manifest.yaml")); err != nil {
				t.Errorf("retry: %v", err)
			}
		})
	}
}
