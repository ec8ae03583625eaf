package jujutest_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// TestCharmUnit runs a built charm (testdata/charm) as Juju runs it, each
// hook a process against the fake tools: config-get gives the options'
// defaults from the charm directory, an action gets its parameters'
// defaults and is refused, without a process, when its schema refuses its
// parameters, collect-metrics and meter-status-changed run in the
// restricted context (no refused tool is called, the hook succeeds), and a
// failed hook sets HookError until one succeeds.
func TestCharmUnit(t *testing.T) {
	dir := filepath.Join("testdata", "charm")
	files := []string{filepath.Join(dir, "metadata.yaml"), filepath.Join(dir, "config.yaml"), filepath.Join(dir, "actions.yaml")}
	u := jujutest.DeployCharm(t, jujutest.BuildCharm(t, dir), &jujutest.Model{Unit: "small/0", Config: map[string]any{"port": 9090}}, juju.Env{ModelName: "test"}, &jujutest.DeployOptions{Files: files})

	r := u.Hook(juju.Env{Name: "install"}, nil)
	if r.Exit != 0 || r.Model.UnitStatus != (jujutest.Status{Status: "active", Message: "small on port 9090"}) {
		t.Fatalf("install: exit %d, status %v, stderr %s", r.Exit, r.Model.UnitStatus, r.Stderr)
	}

	r = u.Hook(juju.Env{Name: "backup", Kind: juju.KindAction}, func(m *jujutest.Model) {
		m.Action = &jujutest.Action{Name: "backup", Params: map[string]any{"level": 2}}
	})
	if r.Exit != 0 || r.Refused != nil || r.Model.Action.Results["target"] != "/srv/backup" || r.Model.Action.Results["level"] != "2" {
		t.Errorf("backup: exit %d, refused %v, results %v, stderr %s", r.Exit, r.Refused, r.Model.Action.Results, r.Stderr)
	}
	r = u.Hook(juju.Env{Name: "backup", Kind: juju.KindAction}, func(m *jujutest.Model) {
		m.Action = &jujutest.Action{Name: "backup", Params: map[string]any{"level": "high"}}
	})
	if r.Refused == nil || !strings.Contains(r.Refused.Error(), "(root).level : Invalid type") || len(r.Model.Calls) != 0 {
		t.Errorf("backup with a bad level: refused %v, calls %v", r.Refused, r.Model.Calls)
	}

	r = u.Hook(juju.Env{Name: "backup", Kind: juju.KindAction}, func(m *jujutest.Model) {
		m.Action = &jujutest.Action{Name: "backup", Params: map[string]any{"paths": []any{"/srv", 7}}}
	})
	if r.Refused == nil || !strings.Contains(r.Refused.Error(), "(root).paths.1 : Invalid type. Expected: string, given: integer") || len(r.Model.Calls) != 0 {
		t.Errorf("backup with a number among its paths: refused %v, calls %v", r.Refused, r.Model.Calls)
	}

	r = u.Hook(juju.Env{Name: "collect-metrics"}, nil)
	if r.Exit != 0 || r.Model.Metrics["users"] != "3" || r.Model.CallCount("config-get") != 0 {
		t.Errorf("collect-metrics: exit %d, metrics %v, calls %v, stderr %s", r.Exit, r.Model.Metrics, r.Model.Calls, r.Stderr)
	}

	r = u.Hook(juju.Env{Name: "meter-status-changed", MeterStatus: "RED"}, nil)
	if r.Exit != 0 || len(r.Model.Calls) != 0 {
		t.Errorf("meter-status-changed: exit %d, calls %v, stderr %s", r.Exit, r.Model.Calls, r.Stderr)
	}

	r = u.Hook(juju.Env{Name: "config-changed"}, func(m *jujutest.Model) { m.Failures = map[string]string{"state-get": "connection is shut down"} })
	if r.Exit == 0 || r.Model.HookError != `hook failed: "config-changed"` || r.Model.ShownStatus().Status != "error" {
		t.Errorf("failed hook: exit %d, hook error %q", r.Exit, r.Model.HookError)
	}
	r = u.Hook(juju.Env{Name: "config-changed"}, func(m *jujutest.Model) { m.Failures = nil; m.Config["port"] = 8081 })
	if r.Exit != 0 || r.Model.HookError != "" || r.Model.UnitStatus.Message != "small on port 8081" {
		t.Errorf("retried hook: exit %d, hook error %q, status %v", r.Exit, r.Model.HookError, r.Model.UnitStatus)
	}
}

// TestCharmUnitDatabase runs the charm's database relation as processes:
// at relation-created the leader writes its request; once the provider
// shares endpoints and the secret named by secret-user, the charm reads
// its credentials with secret-get and uses the server's version.
func TestCharmUnitDatabase(t *testing.T) {
	dir := filepath.Join("testdata", "charm")
	files := []string{filepath.Join(dir, "metadata.yaml"), filepath.Join(dir, "config.yaml"), filepath.Join(dir, "actions.yaml")}
	m := &jujutest.Model{Unit: "small/0", Leader: true, Relations: []jujutest.Relation{{ID: 4, Endpoint: "database", RemoteApp: "postgresql"}}}
	u := jujutest.DeployCharm(t, jujutest.BuildCharm(t, dir), m, juju.Env{}, &jujutest.DeployOptions{Files: files})
	rel := juju.Env{Relation: &juju.RelationID{Endpoint: "database", ID: 4}, RemoteApp: "postgresql"}

	e := rel
	e.Name = "database-relation-created"
	r := u.Hook(e, nil)
	if d := r.Model.Relation(4).LocalAppData; r.Exit != 0 || d["database"] != "small" || !strings.Contains(d["requested-secrets"], `"password"`) {
		t.Fatalf("relation-created: exit %d, request %v, stderr %s", r.Exit, d, r.Stderr)
	}
	e.Name = "database-relation-changed"
	r = u.Hook(e, func(m *jujutest.Model) {
		m.Relations[0].RemoteAppData = map[string]string{"database": "small", "endpoints": "10.0.0.5:5432", "version": "16.2", "secret-user": "secret:pguser"}
		m.Secrets = []jujutest.Secret{{ID: "secret:pguser", Contents: map[int]map[string]string{1: {"username": "relation-4", "password": "pw-4"}}}}
	})
	if r.Exit != 0 || r.Model.WorkloadVersion != "16.2" || r.Model.CallCount("secret-get") != 1 || strings.Contains(r.Stderr, "pw-4") {
		t.Errorf("relation-changed: exit %d, version %q, calls %v, stderr %s", r.Exit, r.Model.WorkloadVersion, r.Model.Calls, r.Stderr)
	}
}
