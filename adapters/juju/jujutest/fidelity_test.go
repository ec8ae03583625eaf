package jujutest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// TestFakeRefusesWhatYAMLRefuses: state-set and relation-set read their
// --file input as Juju does, as YAML, so the characters YAML's reader
// refuses (U+007F, C1 controls, U+FFFE) fail the tool as they fail the hook
// in Juju, while the same characters escaped are read back unchanged.
func TestFakeRefusesWhatYAMLRefuses(t *testing.T) {
	for _, raw := range []string{"\u007f", "\u0080", "\u009f", "\ufffe", "\uffff", "\x01"} {
		m := &jujutest.Model{Unit: "web/0", Relations: []jujutest.Relation{{ID: 1, Endpoint: "db", RemoteApp: "pg"}}}
		for _, tool := range [][]string{{"state-set", "--file", "-"}, {"relation-set", "-r", "1", "--file", "-"}} {
			_, stderr, code := m.Exec(tool[0], tool[1:], []byte(`{"k": "a`+raw+`b"}`))
			if code != 1 || !strings.Contains(string(stderr), "control characters are not allowed") {
				t.Errorf("%s with raw %U: exit %d, %q; want Juju's refusal", tool[0], []rune(raw)[0], code, stderr)
			}
		}
		_, stderr, code := m.Exec("state-set", []string{"--file", "-"}, []byte(`{"k": "a\u007f\u0085\ufffeb"}`))
		if code != 0 || m.Staged.State["k"] != "a\u007f\u0085\ufffeb" {
			t.Errorf("escaped: exit %d %q, state %q", code, stderr, m.Staged.State)
		}
	}
	m := &jujutest.Model{Unit: "web/0"}
	if _, stderr, code := m.Exec("state-set", []string{"--file", "-"}, []byte("{\"k\": \"a\u0085b\"}")); code != 1 || !strings.Contains(string(stderr), "reads as a space") {
		t.Errorf("raw NEL in a double-quoted string: exit %d, %q", code, stderr)
	}
}

// TestFakeDeadRelation: relation-ids lists a dead relation, and every
// tool given its id fails with Juju's "relation not found".
func TestFakeDeadRelation(t *testing.T) {
	m := &jujutest.Model{Unit: "web/0", Relations: []jujutest.Relation{{ID: 1, Endpoint: "db", RemoteApp: "pg", Dead: true}}}
	if out, _, code := m.Exec("relation-ids", []string{"--format=json", "db"}, nil); code != 0 || string(out) != "[\"db:1\"]\n" {
		t.Errorf("relation-ids: %q, exit %d", out, code)
	}
	for _, args := range [][]string{{"relation-list", "-r", "1"}, {"relation-get", "-r", "1", "-", "pg/0"}, {"relation-set", "-r", "1", "a=b"}} {
		if _, stderr, code := m.Exec(args[0], args[1:], nil); code == 0 || !strings.Contains(string(stderr), "relation not found") {
			t.Errorf("%s on a dead relation: exit %d, %q", args[0], code, stderr)
		}
	}
}

// TestFakeRestrictedContext: in collect-metrics only juju-log and
// add-metric work, in meter-status-changed only juju-log; the others,
// config-get among them, fail as Juju's RestrictedContext refuses them.
// add-metric fails in every other hook, as Juju's full context refuses it.
func TestFakeRestrictedContext(t *testing.T) {
	refused := []string{"config-get", "state-get", "status-get", "status-set", "is-leader", "relation-ids", "secret-ids", "action-get"}
	for _, kind := range []juju.Kind{juju.KindCollectMetrics, juju.KindMeterStatusChanged} {
		m := &jujutest.Model{Unit: "web/0", Restricted: kind, Config: map[string]any{"port": 80}}
		for _, tool := range refused {
			if _, stderr, code := m.Exec(tool, nil, nil); code != 1 || !strings.Contains(string(stderr), "not implemented for restricted context") {
				t.Errorf("%s: %s: exit %d, %q", kind, tool, code, stderr)
			}
		}
		if _, stderr, code := m.Exec("juju-log", []string{"hello"}, nil); code != 0 {
			t.Errorf("%s: juju-log: exit %d, %q", kind, code, stderr)
		}
	}
	m := &jujutest.Model{Unit: "web/0", Restricted: juju.KindCollectMetrics}
	if _, stderr, code := m.Exec("add-metric", []string{"users=3"}, nil); code != 0 || m.Metrics["users"] != "3" {
		t.Errorf("add-metric: exit %d, %q, metrics %v", code, stderr, m.Metrics)
	}
	if _, _, code := m.Exec("add-metric", []string{"users=many"}, nil); code != 2 {
		t.Errorf("add-metric of a non-number: exit %d, want 2", code)
	}
	m = &jujutest.Model{Unit: "web/0"}
	if _, stderr, code := m.Exec("add-metric", []string{"users=3"}, nil); code != 1 || !strings.Contains(string(stderr), "metrics not allowed in this context") || len(m.Metrics) != 0 {
		t.Errorf("add-metric outside collect-metrics: exit %d, %q, metrics %v; want it refused", code, stderr, m.Metrics)
	}
	m = &jujutest.Model{Unit: "web/0", Restricted: juju.KindMeterStatusChanged}
	if _, stderr, code := m.Exec("add-metric", []string{"users=3"}, nil); code != 1 || len(m.Metrics) != 0 {
		t.Errorf("add-metric in meter-status-changed: exit %d, %q, metrics %v; want it refused", code, stderr, m.Metrics)
	}
}

// TestHarnessShowsHookError: after a failed hook juju status shows the
// unit in error, `hook failed: "<hook>"`, while status-get still gives the
// workload status; a hook that succeeds clears it; a failed action does
// not set it.
func TestHarnessShowsHookError(t *testing.T) {
	fail := true
	h := &jujutest.Harness{Setup: func(b *opbus.Bus) error {
		return errors.Join(
			b.Handle("h", func(context.Context, *opbus.Event) (opbus.Status, error) {
				if fail {
					return opbus.Status{}, errors.New("boom")
				}
				return opbus.Active("fine"), nil
			}, juju.OnHook()),
			b.Handle("a", func(context.Context, *opbus.Event) (opbus.Status, error) {
				return opbus.Status{}, errors.New("action boom")
			}, juju.OnAction()),
		)
	}}
	m := &jujutest.Model{Unit: "web/0", UnitStatus: jujutest.Status{Status: "active", Message: "before"}}
	m, err := h.Run(context.Background(), "update-status", m)
	if err == nil || m.ShownStatus() != (jujutest.Status{Status: "error", Message: `hook failed: "update-status"`}) {
		t.Fatalf("err %v, shown %v", err, m.ShownStatus())
	}
	if m.UnitStatus.Message != "before" {
		t.Errorf("the workload status changed to %v", m.UnitStatus)
	}
	fail = false
	if m, err = h.Run(context.Background(), "update-status", m); err != nil || m.ShownStatus() != (jujutest.Status{Status: "active", Message: "fine"}) {
		t.Errorf("after a successful hook: err %v, shown %v", err, m.ShownStatus())
	}
	m.Action = &jujutest.Action{Name: "go"}
	if m, err = h.Run(context.Background(), "actions/go", m); err == nil || m.HookError != "" {
		t.Errorf("failed action: err %v, hook error %q", err, m.HookError)
	}
}

// TestProcessStatusWithNUL runs the charm's tools as processes, as Juju
// does: a status message holding a NUL byte, which exec refuses in an
// argument, is cleaned and set instead of failing the hook.
func TestProcessStatusWithNUL(t *testing.T) {
	binDir := jujutest.InstallTools(t)
	path := filepath.Join(t.TempDir(), "model.json")
	if err := jujutest.WriteModel(path, &jujutest.Model{Unit: "web/0"}); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(filepath.Join(binDir, "status-set"), "active", "a\x00b").Run(); err == nil {
		t.Fatal("exec took an argument with a NUL byte")
	}
	tools := juju.Tools{Runner: juju.ExecRunner{Env: processEnv(binDir, path)}}
	if err := tools.StatusSet(context.Background(), juju.StatusActive, "a\x00b"); err != nil {
		t.Fatal(err)
	}
	m, err := jujutest.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.UnitStatus != (jujutest.Status{Status: "active", Message: "ab"}) {
		t.Errorf("status %v", m.UnitStatus)
	}
}

// TestProcessSettingsYAML runs state-set and relation-set as processes:
// values holding what YAML refuses raw reach the model unchanged, and
// the same input written raw fails the tool, as it fails the hook in Juju.
func TestProcessSettingsYAML(t *testing.T) {
	binDir := jujutest.InstallTools(t)
	path := filepath.Join(t.TempDir(), "model.json")
	m := &jujutest.Model{Unit: "web/0", Relations: []jujutest.Relation{{ID: 1, Endpoint: "db", RemoteApp: "pg"}}}
	if err := jujutest.WriteModel(path, m); err != nil {
		t.Fatal(err)
	}
	tools := juju.Tools{Runner: juju.ExecRunner{Env: processEnv(binDir, path)}}
	ctx := context.Background()
	const v = "x\u007f\u0085\u009f\ufffey"
	if err := errors.Join(tools.StateSet(ctx, map[string]string{"k": v}), tools.RelationSet(ctx, 1, map[string]string{"k": v})); err != nil {
		t.Fatal(err)
	}
	raw := juju.ExecRunner{Env: processEnv(binDir, path)}
	_, err := raw.Run(ctx, "state-set", []string{"--file", "-"}, []byte("{\"r\": \""+v+"\"}"))
	var te *juju.ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Stderr, "control characters are not allowed") {
		t.Errorf("raw input: got %v, want Juju's refusal", err)
	}
	if err := jujutest.CommitFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := jujutest.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.State["k"] != v || got.Relation(1).LocalUnitData["k"] != v || got.State["r"] != "" {
		t.Errorf("state %q, relation data %q", got.State, got.Relation(1).LocalUnitData)
	}
}

// TestFakeSecretRevokeInRelationHook: in a relation hook Juju takes -r to
// be the hook's relation, so secret-revoke --app is refused there ("do not
// specify both relation and app") and secret-revoke with no target
// revokes the relation's application; outside relation hooks --app works.
// The tools run as processes read the hook's relation from
// JUJU_RELATION_ID.
func TestFakeSecretRevokeInRelationHook(t *testing.T) {
	granted := func() *jujutest.Model {
		return &jujutest.Model{
			Unit: "web/0", Leader: true,
			Relations: []jujutest.Relation{{ID: 2, Endpoint: "db", RemoteApp: "pg"}},
			Secrets: []jujutest.Secret{{ID: "secret:owned", Owner: "application", Contents: map[int]map[string]string{1: {"pass": "a"}},
				Grants: []jujutest.SecretGrant{{Relation: 2, App: "pg"}}}},
		}
	}
	grants := func(m *jujutest.Model) int {
		if m.Staged != nil && m.Staged.Secrets != nil {
			return len(m.Staged.Secrets[0].Grants)
		}
		return len(m.Secrets[0].Grants)
	}
	rel := 2
	m := granted()
	m.HookRelation = &rel
	if _, stderr, code := m.Exec("secret-revoke", []string{"--app", "pg", "secret:owned"}, nil); code != 2 || !strings.Contains(string(stderr), "do not specify both relation and app") {
		t.Errorf("--app in a relation hook: exit %d, %q; want Juju's refusal", code, stderr)
	}
	if _, stderr, code := m.Exec("secret-revoke", []string{"secret:owned"}, nil); code != 0 || grants(m) != 0 {
		t.Errorf("no target in a relation hook: exit %d, %q, %d grants left; want the relation's application revoked", code, stderr, grants(m))
	}
	m = granted()
	if _, stderr, code := m.Exec("secret-revoke", []string{"--app", "pg", "secret:owned"}, nil); code != 0 || grants(m) != 0 {
		t.Errorf("--app outside a relation hook: exit %d, %q, %d grants left", code, stderr, grants(m))
	}

	path := filepath.Join(t.TempDir(), "model.json")
	if err := jujutest.WriteModel(path, granted()); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{jujutest.ModelEnv: path, "JUJU_RELATION_ID": "db:2", "JUJU_DISPATCH_PATH": "hooks/db-relation-changed"}
	var stderr strings.Builder
	if code := jujutest.ToolMain([]string{"secret-revoke", "--app", "pg", "secret:owned"}, strings.NewReader(""), io.Discard, &stderr, func(k string) string { return env[k] }); code != 2 {
		t.Errorf("as a process in a relation hook: exit %d, %q", code, stderr.String())
	}
	got, err := jujutest.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.HookRelation != nil {
		t.Errorf("the hook's relation was saved in the model: %v", *got.HookRelation)
	}
}

// TestFakeRestrictedContextAsProcess: the tools run as processes take the
// restricted context from JUJU_DISPATCH_PATH, as in process.
func TestFakeRestrictedContextAsProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.json")
	if err := jujutest.WriteModel(path, &jujutest.Model{Unit: "web/0", Config: map[string]any{"port": 80}}); err != nil {
		t.Fatal(err)
	}
	for hook, want := range map[string]int{"collect-metrics": 1, "meter-status-changed": 1, "config-changed": 0} {
		env := map[string]string{jujutest.ModelEnv: path, "JUJU_DISPATCH_PATH": "hooks/" + hook}
		var stderr strings.Builder
		if code := jujutest.ToolMain([]string{"config-get"}, strings.NewReader(""), io.Discard, &stderr, func(k string) string { return env[k] }); code != want {
			t.Errorf("config-get in %s: exit %d, %q; want %d", hook, code, stderr.String(), want)
		}
	}
}

// strictCharm writes a charm directory declaring config options with
// defaults and actions with parameter schemas.
func strictCharm(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"metadata.yaml": "name: web\n",
		"config.yaml":   "options:\n  port: {type: int, default: 8080}\n  name: {type: string, default: web}\n  token: {type: string}\n",
		"actions.yaml": `backup:
  params:
    target: {type: string, default: /srv/backup}
    level: {type: integer, default: 3}
  additionalProperties: false
loose:
  params:
    n: {type: number}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFakeConfigDefaults: config-get gives the defaults of the charm's
// options beside the values set, as Juju does, in process and as a
// process (which reads the charm from JUJU_CHARM_DIR); --all adds the
// options with neither as null.
func TestFakeConfigDefaults(t *testing.T) {
	dir := strictCharm(t)
	var got map[string]any
	h := &jujutest.Harness{CharmDir: dir, Setup: func(b *opbus.Bus) error {
		return b.Handle("h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			var err error
			got, err = juju.FromContext(ctx).Tools.ConfigGet(ctx)
			return opbus.Status{}, err
		}, juju.OnHook())
	}}
	if _, err := h.Run(context.Background(), "config-changed", &jujutest.Model{Unit: "web/0", Config: map[string]any{"name": "shop"}}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"port": int64(8080), "name": "shop"}; !reflect.DeepEqual(got, want) {
		t.Errorf("config-get %v, want %v", got, want)
	}

	path := filepath.Join(t.TempDir(), "model.json")
	if err := jujutest.WriteModel(path, &jujutest.Model{Unit: "web/0", Config: map[string]any{"name": "shop"}}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{jujutest.ModelEnv: path, "JUJU_CHARM_DIR": dir}
	var stdout, stderr strings.Builder
	if code := jujutest.ToolMain([]string{"config-get", "--all", "--format=json"}, strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("config-get as a process: exit %d, %s", code, stderr.String())
	}
	if want := `{"name":"shop","port":8080,"token":null}` + "\n"; stdout.String() != want {
		t.Errorf("config-get --all as a process: %s, want %s", stdout.String(), want)
	}
}

// TestFakeActionParams: an action runs as `juju run` queues it: its
// parameters' defaults are filled in; a parameter of the wrong type, one
// the action does not declare while additionalProperties is false, and an
// action the charm does not declare are refused and the charm does not
// run. Juju 4 refuses undeclared parameters of an action that does not
// say additionalProperties; Juju 3 allows them.
func TestFakeActionParams(t *testing.T) {
	dir := strictCharm(t)
	runs := 0
	var params map[string]any
	h := &jujutest.Harness{CharmDir: dir, Setup: func(b *opbus.Bus) error {
		return b.Handle("h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			runs++
			var err error
			params, err = juju.FromContext(ctx).Tools.ActionGet(ctx)
			return opbus.Status{}, err
		}, juju.OnAction())
	}}
	run := func(name string, p map[string]any, version string) (*jujutest.Model, error) {
		m := &jujutest.Model{Unit: "web/0", Action: &jujutest.Action{Name: name, Params: p}}
		return h.RunEnv(context.Background(), juju.Env{Name: name, Kind: juju.KindAction, Version: version}, m)
	}
	if _, err := run("backup", map[string]any{"level": 5.0}, ""); err != nil || runs != 1 {
		t.Fatalf("backup: %v after %d runs", err, runs)
	}
	if got, _ := json.Marshal(params); string(got) != `{"level":5,"target":"/srv/backup"}` {
		t.Errorf("action-get %s, want the default target", got)
	}
	for _, tt := range []struct {
		name    string
		params  map[string]any
		version string
		want    string
	}{
		{"backup", map[string]any{"level": "high"}, "", "(root).level : Invalid type. Expected: integer, given: string"},
		{"backup", map[string]any{"force": true}, "", "(root) : Additional property force is not allowed"},
		{"restore", nil, "", `action "restore" not defined on unit "web/0"`},
		{"loose", map[string]any{"other": 1.0}, "4.0.0", "(root) : Additional property other is not allowed"},
	} {
		before := runs
		m, err := run(tt.name, tt.params, tt.version)
		if err == nil || !strings.Contains(err.Error(), tt.want) || m != nil || runs != before {
			t.Errorf("%s %v: %v (model %v, ran %d times); want the run refused with %q", tt.name, tt.params, err, m != nil, runs-before, tt.want)
		}
	}
	if _, err := run("loose", map[string]any{"other": 1.0}, "3.6.4"); err != nil {
		t.Errorf("Juju 3 allows undeclared parameters: %v", err)
	}
}
