package juju_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// TestTimersFollowHooks: a periodic handler runs at update-status and at
// no other hook unless its fields changed; a handler that asks to run
// again (Event.Again) shows its own status, lets the hook succeed, and
// runs at the next hook, until a run does not ask again.
func TestTimersFollowHooks(t *testing.T) {
	var periodic, polls []string
	ready := false
	c := charm(
		handler{"check", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			periodic = append(periodic, ev.New["hook"].(map[string]any)["name"].(string))
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"config"}, Every: time.Hour}},
		handler{"db", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			polls = append(polls, ev.New["hook"].(map[string]any)["name"].(string))
			if !ready {
				ev.Again(30 * time.Second)
				return opbus.Waiting("waiting for the database"), nil
			}
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"config"}}},
	)
	m := newModel()
	m = run(t, c, "install", m)
	if got, want := m.UnitStatus, (jujutest.Status{Status: "waiting", Message: "waiting for the database"}); got != want {
		t.Errorf("status after install = %v, want %v: Again shows the handler's status and the hook succeeds", got, want)
	}
	m = run(t, c, "config-changed", m) // config unchanged
	m = run(t, c, "update-status", m)
	ready = true
	m = run(t, c, "config-changed", m) // the poll succeeds, and stops
	m = run(t, c, "update-status", m)
	m.Config["port"] = 9090.0
	m = run(t, c, "config-changed", m) // fields changed: both run
	m = run(t, c, "leader-elected", m)
	if want := []string{"install", "update-status", "update-status", "config-changed"}; !slices.Equal(periodic, want) {
		t.Errorf("periodic handler ran at %v, want %v", periodic, want)
	}
	if want := []string{"install", "config-changed", "update-status", "config-changed", "config-changed"}; !slices.Equal(polls, want) {
		t.Errorf("polling handler ran at %v, want %v", polls, want)
	}
	if got, want := m.UnitStatus, (jujutest.Status{Status: "active"}); got != want {
		t.Errorf("status at the end = %v, want %v", got, want)
	}
}
