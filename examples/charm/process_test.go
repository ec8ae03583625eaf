package main

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

// TranscriptEnv names the variable that makes TestProcessTranscript write
// TRANSCRIPT.md instead of comparing it.
const TranscriptEnv = "OPBUS_WRITE_TRANSCRIPT"

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

// charmBinary builds the charm with the go command as README.md builds it
// for packing (static, without cgo) and returns its path.
func charmBinary(t testing.TB) string {
	t.Helper()
	built.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "istio-gateway-"); built.err != nil {
			return
		}
		built.err = goBuild(filepath.Join(built.dir, "istio-gateway"), "CGO_ENABLED=0", "-trimpath")
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "istio-gateway")
}

// goBuild builds the charm to out with the go command, adding env to its
// environment and flags to its arguments.
func goBuild(out string, env string, flags ...string) error {
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, ".")...)
	cmd.Env = append(os.Environ(), env)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(flags, " "), err, out)
	}
	return nil
}

// unit is a deployed unit of the charm: a charm directory as charmcraft
// packs it (dispatch, which is the charm's binary, and the metadata), the
// fake hook tools and the model file they read and write.
type unit struct {
	t     testing.TB
	dir   string // the charm directory, JUJU_CHARM_DIR
	model string // the model file
	tools string // the fake hook tools' directory
}

// deploy makes a unit of the charm whose model is m.
func deploy(t testing.TB, m *jujutest.Model) *unit {
	t.Helper()
	u := &unit{t: t, dir: charmDir(t), tools: jujutest.InstallTools(t)}
	u.model = filepath.Join(t.TempDir(), "model.json")
	err := errors.Join(
		install(charmBinary(t), filepath.Join(u.dir, "dispatch")),
		jujutest.WriteModel(u.model, m),
	)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// install puts the executable bin at path as a regular file, as Juju
// unpacks a charm: a hard link, or a copy where bin cannot be linked.
func install(bin, path string) error {
	if os.Link(bin, path) == nil {
		return nil
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o755)
}

// result is what one hook did.
type result struct {
	exit   int
	stderr string
	model  *jujutest.Model // after the hook's writes were committed or discarded
}

// hook runs one hook as Juju does: a new process of dispatch, in the
// charm directory, with the hook's environment and the fake tools
// alone in PATH. Then, as Juju does, it applies the hook's state-set and
// relation-set if the process exited 0 and drops them otherwise. change,
// if not nil, first changes the model (what happened before the hook);
// the model's call log is cleared so that it holds this hook's calls.
func (u *unit) hook(e juju.Env, change func(*jujutest.Model)) result {
	u.t.Helper()
	u.before(change)
	return u.run(u.command(e))
}

// before changes the model with change, if not nil, and clears its call
// log, before a hook.
func (u *unit) before(change func(*jujutest.Model)) {
	u.t.Helper()
	err := jujutest.UpdateModel(u.model, func(m *jujutest.Model) error {
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

// run runs cmd, a hook's process, and then commits the model's writes if
// it exited 0 and discards them otherwise, as Juju does.
func (u *unit) run(cmd *exec.Cmd) result {
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
		err = jujutest.CommitFile(u.model)
	} else {
		err = jujutest.DiscardFile(u.model)
	}
	if err != nil {
		u.t.Fatal(err)
	}
	m, err := jujutest.ReadModel(u.model)
	if err != nil {
		u.t.Fatal(err)
	}
	return result{exit: code, stderr: stderr.String(), model: m}
}

// command returns the process Juju would start for the hook e.
func (u *unit) command(e juju.Env) *exec.Cmd {
	e.Unit, e.ModelName, e.ModelUUID = "istio-gateway/0", "kubeflow", "1f3a5e2c-7b9d-4c1e-8f2a-6d4b3c2a1e0f"
	e.CharmDir, e.Version = u.dir, "3.6.4"
	env := []string{"PATH=" + u.tools, jujutest.ModelEnv + "=" + u.model}
	vars := e.Vars()
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	cmd := exec.Command(filepath.Join(u.dir, "dispatch"))
	cmd.Dir, cmd.Env = u.dir, env
	return cmd
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
		r := u.hook(hookEnv(s.hook), s.change)
		if r.exit != 0 {
			t.Fatalf("%s: exit %d: %s", s.hook, r.exit, r.stderr)
		}
		if r.model.UnitStatus != s.want {
			t.Errorf("%s: status %q, want %q", s.hook, r.model.UnitStatus, s.want)
		}
		_, err := os.Stat(filepath.Join(u.dir, "manifest.yaml"))
		if rendered := err == nil; rendered != (i >= 3) {
			t.Errorf("%s: manifest rendered: %v", s.hook, rendered)
		}
		m := r.model
		if m.CallCount("state-get") != 1 || m.CallCount("state-set") > 1 || m.CallCount("status-set") > 1 {
			t.Errorf("%s: tool calls %s: want one state-get and at most one state-set and status-set", s.hook, calls(m))
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %d | %s | %s | %s |\n", i+1, s.hook, s.before, r.exit, status(m.UnitStatus), slots(t, m), calls(m))
	}
	last, _ := jujutest.ReadModel(u.model)
	if n := last.CallCount("state-set") + last.CallCount("status-set"); n != 0 {
		t.Errorf("update-status with nothing changed made %d state-set or status-set calls", n)
	}
	manifest, err := os.ReadFile(filepath.Join(u.dir, "manifest.yaml"))
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
	if os.Getenv(TranscriptEnv) != "" {
		if err := os.WriteFile("TRANSCRIPT.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("TRANSCRIPT.md")
	if err != nil || string(want) != got {
		t.Errorf("TRANSCRIPT.md is not what the charm does now (%v); regenerate it with %s=1 go test -run TestProcessTranscript", err, TranscriptEnv)
	}
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

// status formats a unit status.
func status(s jujutest.Status) string {
	if s.Message == "" {
		return "**" + s.Status + "**"
	}
	return "**" + s.Status + "**: " + s.Message
}

// calls formats the tool calls of a hook, collapsing repeats.
func calls(m *jujutest.Model) string {
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

// slots formats the levels of the unit's stored slots.
func slots(t testing.TB, m *jujutest.Model) string {
	t.Helper()
	var records map[string]struct {
		Slots map[string]struct {
			Level string `json:"level"`
		} `json:"slots"`
	}
	if err := json.Unmarshal([]byte(m.State[juju.DefaultStateKey]), &records); err != nil {
		t.Fatalf("stored records: %v", err)
	}
	rec := records["unit "+m.Unit]
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(rec.Slots)) {
		parts = append(parts, id+": "+rec.Slots[id].Level)
	}
	return strings.Join(parts, ", ")
}

// TestProcessFailures checks that a hook whose tool or handler fails
// exits non-zero, leaves the stored record as it was, and that the next
// hook recovers.
func TestProcessFailures(t *testing.T) {
	tests := []struct {
		name   string
		inject func(u *unit, m *jujutest.Model)
		clear  func(u *unit, m *jujutest.Model)
		stderr string
	}{
		{"state-set fails",
			func(_ *unit, m *jujutest.Model) {
				m.Failures = map[string]string{"state-set": "controller unavailable"}
			},
			func(_ *unit, m *jujutest.Model) { m.Failures = nil },
			"state-set exited with code 1: ERROR controller unavailable"},
		{"status-set fails",
			func(_ *unit, m *jujutest.Model) {
				m.Failures = map[string]string{"status-set": "controller unavailable"}
			},
			func(_ *unit, m *jujutest.Model) { m.Failures = nil },
			"status-set exited with code 1: ERROR controller unavailable"},
		{"a handler fails",
			func(u *unit, m *jujutest.Model) {
				// A directory in the way of the manifest makes writing it fail.
				os.MkdirAll(filepath.Join(u.dir, "manifest.yaml", "x"), 0o755)
			},
			func(u *unit, m *jujutest.Model) { os.RemoveAll(filepath.Join(u.dir, "manifest.yaml")) },
			`handler "istio-pilot" on unit istio-gateway/0: writing the manifest`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := installed()
			joinPilot(start)
			pilotSends(start)
			u := deploy(t, start)
			first := u.hook(hookEnv("install"), nil)
			if first.exit != 0 {
				t.Fatalf("install: exit %d: %s", first.exit, first.stderr)
			}
			stored := first.model.State

			failed := u.hook(hookEnv("config-changed"), func(m *jujutest.Model) {
				setKind("ingress")(m)
				tt.inject(u, m)
			})
			if failed.exit == 0 || !strings.Contains(failed.stderr, tt.stderr) {
				t.Fatalf("exit %d, stderr %q: want a failure naming %q", failed.exit, failed.stderr, tt.stderr)
			}
			if !maps.Equal(failed.model.State, stored) {
				t.Errorf("the stored record changed:\n%v\nwas\n%v", failed.model.State, stored)
			}
			if failed.model.UnitStatus != first.model.UnitStatus {
				t.Errorf("status %q after the failure, want the previous %q", failed.model.UnitStatus, first.model.UnitStatus)
			}

			// Juju retries the hook.
			retry := u.hook(hookEnv("config-changed"), func(m *jujutest.Model) { tt.clear(u, m) })
			if retry.exit != 0 {
				t.Fatalf("retry: exit %d: %s", retry.exit, retry.stderr)
			}
			if retry.model.UnitStatus != (jujutest.Status{Status: "active"}) || maps.Equal(retry.model.State, stored) {
				t.Errorf("retry: status %q, state changed %v", retry.model.UnitStatus, !maps.Equal(retry.model.State, stored))
			}
			if _, err := os.Stat(filepath.Join(u.dir, "manifest.yaml")); err != nil {
				t.Errorf("retry: %v", err)
			}
		})
	}
}
