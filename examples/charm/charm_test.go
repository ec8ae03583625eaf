package main

import (
	"context"
	"os"
	"path/filepath"
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

// model returns a leader unit of the charm with config kind and, when
// pilot is not nil, an istio-pilot relation whose application sent pilot.
func model(leader bool, kind string, pilot map[string]string) *jujutest.Model {
	m := &jujutest.Model{Unit: "istio-gateway/0", Leader: leader, Config: map[string]any{"kind": kind}}
	if pilot != nil {
		m.Relations = []jujutest.Relation{{
			ID: 2, Endpoint: "istio-pilot", RemoteApp: "istio-pilot",
			RemoteUnits: []string{"istio-pilot/0"}, RemoteAppData: pilot,
		}}
	}
	return m
}

var pilotData = map[string]string{"service-name": "istiod", "service-port": "15012"}

func TestScenarios(t *testing.T) {
	tests := []struct {
		name     string
		hook     string
		state    *jujutest.Model
		want     jujutest.Status
		manifest string // a line the manifest holds; empty: no manifest
	}{
		{"leader, bad config, no relation", "install", model(true, "", nil),
			jujutest.Status{Status: "blocked", Message: "Config item 'kind' must be set to ingress or egress; Waiting for istio-pilot relation"}, ""},
		{"unknown kind", "config-changed", model(true, "sideways", pilotData),
			jujutest.Status{Status: "blocked", Message: "Config item 'kind' must be set to ingress or egress"}, ""},
		{"no relation", "config-changed", model(true, "ingress", nil),
			jujutest.Status{Status: "blocked", Message: "Waiting for istio-pilot relation"}, ""},
		{"relation without data", "istio-pilot-relation-joined", model(true, "ingress", map[string]string{}),
			jujutest.Status{Status: "waiting", Message: "Waiting for istio-pilot relation data"}, ""},
		{"relation with half the data", "istio-pilot-relation-changed", model(true, "ingress", map[string]string{"service-name": "istiod"}),
			jujutest.Status{Status: "waiting", Message: "Waiting for istio-pilot relation data"}, ""},
		{"not the leader", "istio-pilot-relation-changed", model(false, "ingress", pilotData),
			jujutest.Status{Status: "waiting", Message: "Waiting for leadership"}, ""},
		{"blocked outranks waiting", "install", model(false, "", nil),
			jujutest.Status{Status: "blocked", Message: "Config item 'kind' must be set to ingress or egress; Waiting for istio-pilot relation"}, ""},
		{"ingress", "istio-pilot-relation-changed", model(true, "ingress", pilotData),
			jujutest.Status{Status: "active"}, "type: LoadBalancer"},
		{"egress", "istio-pilot-relation-changed", model(true, "egress", pilotData),
			jujutest.Status{Status: "active"}, "name: istio-egressgateway"},
		{"bad data from the pilot", "istio-pilot-relation-changed", model(true, "egress", map[string]string{"service-name": "istiod\nkind: x", "service-port": "15012"}),
			jujutest.Status{Status: "blocked", Message: `istio-pilot sent an invalid service-name "istiod\nkind: x"`}, ""},
		{"bad port from the pilot", "istio-pilot-relation-changed", model(true, "egress", map[string]string{"service-name": "istiod", "service-port": "99999"}),
			jujutest.Status{Status: "blocked", Message: `istio-pilot sent an invalid service-port "99999"`}, ""},
		{"relation broken", "istio-pilot-relation-broken", model(true, "ingress", pilotData),
			jujutest.Status{Status: "blocked", Message: "Waiting for istio-pilot relation"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := charmDir(t)
			c := &jujutest.Harness{Setup: setup, CharmDir: dir, ModelName: "kubeflow"}
			out, err := c.Run(context.Background(), tt.hook, tt.state)
			if err != nil {
				t.Fatal(err)
			}
			if out.UnitStatus != tt.want {
				t.Errorf("status %q, want %q", out.UnitStatus, tt.want)
			}
			data, err := os.ReadFile(filepath.Join(dir, "manifest.yaml"))
			switch {
			case tt.manifest == "" && err == nil:
				t.Errorf("a manifest was rendered:\n%s", data)
			case tt.manifest != "" && err != nil:
				t.Errorf("no manifest: %v", err)
			case tt.manifest != "" && (!strings.Contains(string(data), tt.manifest) || !strings.Contains(string(data), "istiod.kubeflow.svc:15012")):
				t.Errorf("manifest lacks %q or the pilot's address:\n%s", tt.manifest, data)
			}
		})
	}
}

// TestHandlersRunOnlyWhenTheirInputsChange follows a unit through the
// hooks Juju runs and checks which tool calls each makes.
func TestHandlersRunOnlyWhenTheirInputsChange(t *testing.T) {
	dir := charmDir(t)
	c := &jujutest.Harness{Setup: setup, CharmDir: dir, ModelName: "kubeflow"}
	m := model(true, "ingress", pilotData)
	for _, hook := range []string{"install", "config-changed", "start", "istio-pilot-relation-changed"} {
		var err error
		if m, err = c.Run(context.Background(), hook, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "manifest.yaml")); err != nil {
		t.Fatal(err)
	}
	// Nothing changed: no handler runs, so nothing is rendered, stored or
	// set.
	m, err := c.Run(context.Background(), "update-status", m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.yaml")); err == nil {
		t.Error("the manifest was rendered again with nothing changed")
	}
	if n := m.CallCount("state-set") + m.CallCount("status-set"); n != 0 {
		t.Errorf("%d state-set and status-set calls with nothing changed", n)
	}
	// The pilot moves: only istio-pilot runs, and renders.
	m.Relations[0].RemoteAppData = map[string]string{"service-name": "istiod", "service-port": "15013"}
	if m, err = c.Run(context.Background(), "istio-pilot-relation-changed", m); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.yaml"))
	if err != nil || !strings.Contains(string(data), ":15013") {
		t.Errorf("manifest not rendered for the new port: %v", err)
	}
	if m.CallCount("state-set") != 1 || m.CallCount("status-set") != 0 {
		t.Errorf("%d state-set and %d status-set calls, want 1 and 0", m.CallCount("state-set"), m.CallCount("status-set"))
	}
	// The relation breaks on a Juju that no longer lists it.
	gone := juju.Env{Name: "istio-pilot-relation-broken", Relation: &juju.RelationID{Endpoint: "istio-pilot", ID: 2}, RemoteApp: "istio-pilot"}
	m.Relations = nil
	if m, err = c.RunEnv(context.Background(), gone, m); err != nil {
		t.Fatal(err)
	}
	if m.UnitStatus != (jujutest.Status{Status: "blocked", Message: "Waiting for istio-pilot relation"}) {
		t.Errorf("after relation-broken: %q", m.UnitStatus)
	}
}
