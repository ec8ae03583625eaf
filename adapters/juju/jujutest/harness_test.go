package jujutest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// hookCharm returns a Context whose charm records the hook context of
// every run in *seen.
func hookCharm(seen *[]juju.HookInfo) *jujutest.Harness {
	return &jujutest.Harness{
		Setup: func(b *opbus.Bus) error {
			return b.Handle("hook", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
				d, err := juju.DocumentOf(ev)
				if err == nil {
					*seen = append(*seen, d.Hook)
				}
				return opbus.Status{}, err
			}, juju.OnHook())
		},
	}
}

func TestContextHookContext(t *testing.T) {
	m := &jujutest.Model{
		Unit: "web/0",
		Relations: []jujutest.Relation{
			{ID: 4, Endpoint: "db", RemoteApp: "pg", RemoteUnits: []string{"pg/2", "pg/10", "pg/1"}},
			{ID: 6, Endpoint: "cache", RemoteApp: "redis"},
			{ID: 7, Endpoint: "many", RemoteApp: "a"}, {ID: 8, Endpoint: "many", RemoteApp: "b"},
		},
	}
	id := func(n int) *int { return &n }
	tests := []struct {
		hook string
		want juju.HookInfo // without Event
		err  string
	}{
		{"install", juju.HookInfo{Name: "install", Kind: juju.KindInstall}, ""},
		{"hooks/start", juju.HookInfo{Name: "start", Kind: juju.KindStart}, ""},
		{"db-relation-joined", juju.HookInfo{Name: "db-relation-joined", Kind: juju.KindRelationJoined, Endpoint: "db",
			RelationID: id(4), RemoteApp: "pg", RemoteUnit: "pg/2"}, ""},
		{"db-relation-changed", juju.HookInfo{Name: "db-relation-changed", Kind: juju.KindRelationChanged, Endpoint: "db",
			RelationID: id(4), RemoteApp: "pg", RemoteUnit: "pg/1"}, ""},
		{"cache-relation-changed", juju.HookInfo{Name: "cache-relation-changed", Kind: juju.KindRelationChanged, Endpoint: "cache",
			RelationID: id(6), RemoteApp: "redis"}, ""},
		{"cache-relation-created", juju.HookInfo{Name: "cache-relation-created", Kind: juju.KindRelationCreated, Endpoint: "cache",
			RelationID: id(6), RemoteApp: "redis"}, ""},
		{"app-pebble-ready", juju.HookInfo{Name: "app-pebble-ready", Kind: juju.KindPebbleReady, Endpoint: "app", Workload: "app"}, ""},
		{"cache-relation-joined", juju.HookInfo{}, "relation 6 has no remote unit to join"},
		{"db-relation-departed", juju.HookInfo{}, "use Harness.RunEnv"},
		{"many-relation-changed", juju.HookInfo{}, `the model has 2 relations on endpoint "many"`},
		{"none-relation-changed", juju.HookInfo{}, `the model has 0 relations on endpoint "none"`},
		{"data-storage-attached", juju.HookInfo{}, "needs JUJU_STORAGE_ID (give the hook's context with Harness.RunEnv)"},
	}
	for _, tt := range tests {
		t.Run(tt.hook, func(t *testing.T) {
			var seen []juju.HookInfo
			_, err := hookCharm(&seen).Run(context.Background(), tt.hook, m)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, want := seen[0], tt.want
			if (got.RelationID == nil) != (want.RelationID == nil) || (got.RelationID != nil && *got.RelationID != *want.RelationID) {
				t.Errorf("relation id %v, want %v", got.RelationID, want.RelationID)
			}
			got.Event, got.RelationID, want.RelationID = "", nil, nil
			if got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestContextRunEnv(t *testing.T) {
	var seen []juju.HookInfo
	c := hookCharm(&seen)
	m := &jujutest.Model{Unit: "web/0", Relations: []jujutest.Relation{{ID: 4, Endpoint: "db", RemoteApp: "pg"}}}
	e := juju.Env{Name: "db-relation-departed", Relation: &juju.RelationID{Endpoint: "db", ID: 4},
		RemoteUnit: "pg/3", DepartingUnit: "pg/3"}
	out, err := c.RunEnv(context.Background(), e, m)
	if err != nil {
		t.Fatal(err)
	}
	if h := seen[0]; h.DepartingUnit != "pg/3" || h.RemoteApp != "pg" || h.Kind != juju.KindRelationDeparted {
		t.Errorf("got %+v", h)
	}
	if out == m || m.State != nil || out.State == nil {
		t.Errorf("the input model was changed, or the output not: in %v, out %v", m.State, out.State)
	}
}

func TestContextIsolatesRuns(t *testing.T) {
	c := &jujutest.Harness{Setup: func(b *opbus.Bus) error {
		return b.Handle("h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			return opbus.Status{}, juju.FromContext(ctx).Tools.RelationSet(ctx, 1, map[string]string{"k": "v"})
		}, juju.OnHook())
	}}
	in := &jujutest.Model{Unit: "a/0", Relations: []jujutest.Relation{{ID: 1, Endpoint: "x", RemoteApp: "b"}},
		Calls: []jujutest.Call{{Name: "old"}}}
	out, err := c.Run(context.Background(), "start", in)
	if err != nil {
		t.Fatal(err)
	}
	if in.Relations[0].LocalUnitData != nil || len(in.Calls) != 1 {
		t.Errorf("input changed: %+v", in)
	}
	if out.Relations[0].LocalUnitData["k"] != "v" || out.Calls[0].Name == "old" || out.Staged != nil {
		t.Errorf("output: %+v", out)
	}
	if _, err := (&jujutest.Harness{}).Run(context.Background(), "start", in); err == nil {
		t.Error("no Setup: no error")
	}
}

func TestFailures(t *testing.T) {
	m := &jujutest.Model{Unit: "a/0", Failures: map[string]string{"state-set": "controller unavailable"}}
	_, stderr, code := m.Exec("state-set", []string{"k=v"}, nil)
	if code != 1 || string(stderr) != "ERROR controller unavailable\n" || m.Staged != nil || m.Calls[0].Exit != 1 {
		t.Errorf("got %d, %q, staged %v, calls %v", code, stderr, m.Staged, m.Calls)
	}
}

func TestPeerAppDataReadableByEveryUnit(t *testing.T) {
	m := &jujutest.Model{Unit: "web/1", Relations: []jujutest.Relation{
		{ID: 2, Endpoint: "peers", RemoteApp: "web", LocalAppData: map[string]string{"k": "v"}},
		{ID: 3, Endpoint: "db", RemoteApp: "pg"},
	}}
	out, _, code := m.Exec("relation-get", []string{"--format=json", "-r", "2", "--app", "-", "web"}, nil)
	if code != 0 || string(out) != `{"k":"v"}`+"\n" {
		t.Errorf("peer app data: got %d %q", code, out)
	}
	if _, _, code := m.Exec("relation-get", []string{"-r", "3", "--app", "-", "web"}, nil); code != 1 {
		t.Errorf("own app data in a regular relation on a non-leader: exit %d, want 1", code)
	}
}

func ExampleHarness_Run() {
	// A charm with two handlers, each with its own status slot.
	c := &jujutest.Harness{Setup: func(b *opbus.Bus) error {
		err := b.Handle("config", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.New["config"].(map[string]any)["port"] == nil {
				return opbus.Blocked("set port"), nil
			}
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"config.port"}})
		if err != nil {
			return err
		}
		return b.Handle("db", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			d, err := juju.DocumentOf(ev)
			if err != nil {
				return opbus.Status{}, err
			}
			if len(d.Relations["db"]) == 0 {
				return opbus.Blocked("relate to a database"), nil
			}
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"relations.db"}})
	}}

	state := &jujutest.Model{Unit: "web/0"}
	state, _ = c.Run(context.Background(), "install", state)
	fmt.Println(state.UnitStatus)

	state.Config = map[string]any{"port": 8080}
	state, _ = c.Run(context.Background(), "config-changed", state)
	fmt.Println(state.UnitStatus)

	state.Relations = append(state.Relations, jujutest.Relation{ID: 1, Endpoint: "db", RemoteApp: "pg", RemoteUnits: []string{"pg/0"}})
	state, _ = c.Run(context.Background(), "db-relation-joined", state)
	fmt.Println(state.UnitStatus, len(state.UnitStatusHistory))
	// Output:
	// {blocked set port; relate to a database}
	// {blocked relate to a database}
	// {active } 3
}
