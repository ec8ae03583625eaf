package juju_test

import (
	"context"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// TestOptionsReadForCollectors: a collector sees only the fields read, and
// it cannot subscribe; Options.Read has the adapter read fields for it, so
// that a charm whose status comes from a collector alone sees its
// relations. Its fields are checked as subscriptions are.
func TestOptionsReadForCollectors(t *testing.T) {
	collector := func(read []string) *jujutest.Harness {
		return &jujutest.Harness{
			Options: &juju.Options{Endpoints: []string{"db", "peers", "web"}, Read: read},
			Setup: func(b *opbus.Bus) error {
				return b.Collect("db", func(_ context.Context, _ opbus.Key, obj map[string]any) opbus.Status {
					rels, _ := obj["relations"].(map[string]any)
					if list, _ := rels["db"].([]any); len(list) > 0 {
						return opbus.Active("")
					}
					return opbus.Blocked("Needs a db relation")
				})
			},
		}
	}
	m, err := collector(nil).Run(context.Background(), "update-status", newModel())
	if err != nil || m.UnitStatus.Status != "blocked" {
		t.Fatalf("without Read: %v, status %v (the collector sees no relations)", err, m.UnitStatus)
	}
	m, err = collector([]string{"relations.db"}).Run(context.Background(), "update-status", newModel())
	if err != nil || m.UnitStatus.Status != "active" {
		t.Errorf("with Read: %v, status %v", err, m.UnitStatus)
	}
	for read, want := range map[string]string{
		"relations.dbb":       `the charm has no endpoint "dbb"`,
		"containers.workload": "containers are probed for handlers",
		"cofig":               "not in the document",
	} {
		if _, err := collector([]string{read}).Run(context.Background(), "update-status", newModel()); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), `handler "`) {
			t.Errorf("Read %q: %v, want an error with %q that names no handler", read, err, want)
		}
	}
}

// TestCollectorSubscribes: a collector that names the fields it reads
// (opbus.Bus.Collect's fields) sees them at every hook, with no handler
// subscribing to them and no Options.Read; its fields are checked as a
// handler's are.
func TestCollectorSubscribes(t *testing.T) {
	collector := func(fields ...string) *jujutest.Harness {
		return &jujutest.Harness{
			Options: &juju.Options{Endpoints: []string{"db", "peers", "web"}},
			Setup: func(b *opbus.Bus) error {
				return b.Collect("db", func(_ context.Context, _ opbus.Key, obj map[string]any) opbus.Status {
					rels, _ := obj["relations"].(map[string]any)
					if list, _ := rels["db"].([]any); len(list) > 0 {
						return opbus.Active("")
					}
					return opbus.Blocked("Needs a db relation")
				}, fields...)
			},
		}
	}
	m, err := collector().Run(context.Background(), "update-status", newModel())
	if err != nil || m.UnitStatus.Status != "blocked" {
		t.Fatalf("a collector without fields: %v, status %v (it sees no relations)", err, m.UnitStatus)
	}
	m, err = collector("relations.db").Run(context.Background(), "update-status", newModel())
	if err != nil || m.UnitStatus.Status != "active" {
		t.Errorf("a collector reading relations.db: %v, status %v, want active", err, m.UnitStatus)
	}
	for field, want := range map[string]string{
		"relations.dbb": `the charm has no endpoint "dbb"`,
		"cofig":         "not in the document",
	} {
		if _, err := collector(field).Run(context.Background(), "update-status", newModel()); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `collector "db"`) {
			t.Errorf("a collector reading %q: %v, want an error naming it with %q", field, err, want)
		}
	}
}
