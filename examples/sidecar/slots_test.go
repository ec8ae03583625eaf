package main

import (
	"context"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

// TestHandlerSlots runs one hook against a given state, in process, and
// checks each handler's own slot: what config, workload and secret report
// does not depend on what the others report.
func TestHandlerSlots(t *testing.T) {
	type slots map[string]jujutest.Status
	var (
		active  = jujutest.Status{Status: "active"}
		waiting = jujutest.Status{Status: "waiting", Message: "Waiting for Pebble"}
		granted = func(m *jujutest.Model) { m.Secrets = []jujutest.Secret{userSecret(password1)} }
		named   = func(m *jujutest.Model) { m.Config["password-secret"] = secretID }
	)
	tests := []struct {
		name   string
		hook   string
		up     bool // the container's Pebble answers
		change func(*jujutest.Model)
		want   slots
		unit   jujutest.Status
	}{
		{"port too high", "config-changed", true, func(m *jujutest.Model) { named(m); granted(m); m.Config["port"] = 65536.0 },
			slots{"config": {Status: "blocked", Message: "Config item 'port' must be from 1 to 65535, not 65536"}, "workload": {}, "secret": active},
			jujutest.Status{Status: "blocked", Message: "Config item 'port' must be from 1 to 65535, not 65536"}},
		{"port zero, option unset", "config-changed", false, func(m *jujutest.Model) { m.Config["port"] = 0.0 },
			slots{"config": {Status: "blocked", Message: "Config item 'port' must be from 1 to 65535, not 0"}, "workload": waiting,
				"secret": {Status: "blocked", Message: "Config item 'password-secret' must name a user secret"}},
			jujutest.Status{Status: "blocked", Message: "Config item 'port' must be from 1 to 65535, not 0; Config item 'password-secret' must name a user secret"}},
		{"highest port", "config-changed", true, func(m *jujutest.Model) { named(m); granted(m); m.Config["port"] = 65535.0 },
			slots{"config": active, "workload": active, "secret": active}, active},
		{"container down", "install", false, nil,
			slots{"config": active, "workload": waiting}, waiting},
		{"option unset", "config-changed", true, nil,
			slots{"config": active, "workload": active, "secret": {Status: "blocked", Message: "Config item 'password-secret' must name a user secret"}},
			jujutest.Status{Status: "blocked", Message: "Config item 'password-secret' must name a user secret"}},
		{"not granted", "config-changed", true, func(m *jujutest.Model) {
			named(m)
			granted(m)
			m.Secrets[0].Ungranted = true
		}, slots{"config": active, "workload": active, "secret": {Status: "blocked", Message: "Secret not granted"}},
			jujutest.Status{Status: "blocked", Message: "Secret not granted"}},
		{"not granted, before Juju 3.6", "config-changed", true, func(m *jujutest.Model) {
			named(m)
			granted(m)
			m.Failures = map[string]string{"secret-get": "permission denied"}
		}, slots{"config": active, "workload": active, "secret": {Status: "blocked", Message: "Secret not granted"}},
			jujutest.Status{Status: "blocked", Message: "Secret not granted"}},
		{"not found", "config-changed", true, named,
			slots{"config": active, "workload": active, "secret": {Status: "blocked", Message: "Secret not granted"}},
			jujutest.Status{Status: "blocked", Message: "Secret not granted"}},
		{"not granted, container down", "config-changed", false, named,
			slots{"config": active, "workload": waiting, "secret": {Status: "blocked", Message: "Secret not granted"}},
			jujutest.Status{Status: "blocked", Message: "Secret not granted"}},
		{"no password key", "config-changed", true, func(m *jujutest.Model) {
			named(m)
			m.Secrets = []jujutest.Secret{{ID: secretID, Contents: map[int]map[string]string{1: {"username": "admin"}}}}
		}, slots{"config": active, "workload": active, "secret": {Status: "blocked", Message: "Secret has no password key"}},
			jujutest.Status{Status: "blocked", Message: "Secret has no password key"}},
		{"granted, container down", "config-changed", false, func(m *jujutest.Model) { named(m); granted(m) },
			slots{"config": active, "workload": waiting, "secret": active}, waiting},
		{"granted", "config-changed", true, func(m *jujutest.Model) { named(m); granted(m) },
			slots{"config": active, "workload": active, "secret": active}, active},
		{"install does not read the secret", "install", true, func(m *jujutest.Model) { named(m); granted(m) },
			slots{"config": active, "workload": active}, active},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := charmproc.NewContainer(t, container)
			if tt.up {
				w.Up()
			}
			h := &jujutest.Harness{Setup: setup, CharmDir: charmproc.CharmDir(t, metadataFiles...), PebbleDir: w.Dir}
			m := installed()
			if tt.change != nil {
				tt.change(m)
			}
			out, err := h.RunEnv(context.Background(), hookEnv(tt.hook), m)
			if err != nil {
				t.Fatal(err)
			}
			got := charmproc.Slots(t, out)
			for id, want := range tt.want {
				if got[id] != want {
					t.Errorf("slot %s: got %+v, want %+v", id, got[id], want)
				}
			}
			for id := range got {
				if _, ok := tt.want[id]; !ok {
					t.Errorf("slot %s: got %+v, want none", id, got[id])
				}
			}
			if out.UnitStatus != tt.unit {
				t.Errorf("unit status %+v, want %+v", out.UnitStatus, tt.unit)
			}
			pw, pushed := []byte(nil), false
			if w.Pebble != nil {
				pw, pushed = w.Pebble.File(passwordFile)
			}
			if wantPushed := tt.want["secret"] == active && tt.up; pushed != wantPushed || (pushed && string(pw) != password1) {
				t.Errorf("password file pushed: %v, want %v", pushed, wantPushed)
			}
		})
	}
}

// TestSecretToolFailureFailsTheHook checks that secret-get failing for a
// reason other than access (the controller unreachable) fails the hook,
// which Juju retries, instead of reporting "Secret not granted".
func TestSecretToolFailureFailsTheHook(t *testing.T) {
	w := charmproc.NewContainer(t, container)
	w.Up()
	h := &jujutest.Harness{Setup: setup, CharmDir: charmproc.CharmDir(t, metadataFiles...), PebbleDir: w.Dir}
	m := installed()
	m.Config["password-secret"] = secretID
	m.Secrets = []jujutest.Secret{userSecret(password1)}
	m.Failures = map[string]string{"secret-get": "connection is shut down"}
	_, err := h.RunEnv(context.Background(), hookEnv("config-changed"), m)
	if err == nil || !strings.Contains(err.Error(), `handler "secret"`) || !strings.Contains(err.Error(), "connection is shut down") {
		t.Fatalf("got %v, want the secret handler's failure", err)
	}
}
