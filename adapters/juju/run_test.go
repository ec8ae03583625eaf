package juju_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// newModel returns a leader unit with config and relations on two
// endpoints.
func newModel() *jujutest.Model {
	return &jujutest.Model{
		Unit:   "web/0",
		Leader: true,
		Config: map[string]any{"port": 8080.0, "password": "s3cret"},
		Relations: []jujutest.Relation{
			{
				ID: 3, Endpoint: "db", RemoteApp: "pg",
				RemoteUnits:     []string{"pg/1", "pg/0"},
				RemoteUnitsData: map[string]map[string]string{"pg/0": {"host": "10.0.0.1"}, "pg/1": {"host": "10.0.0.2"}},
				RemoteAppData:   map[string]string{"user": "web"},
			},
			{ID: 5, Endpoint: "peers", RemoteApp: "web"},
		},
	}
}

// endpoints are the endpoints of the charm under test.
var endpoints = &juju.Options{Endpoints: []string{"db", "peers", "web"}}

// handler is one handler to register.
type handler struct {
	id string
	fn opbus.HandlerFunc
	on opbus.On
}

// charm returns a Context for the handlers.
func charm(hs ...handler) *jujutest.Harness {
	return &jujutest.Harness{
		Setup: func(b *opbus.Bus) error {
			for _, h := range hs {
				if err := b.Handle(h.id, h.fn, h.on); err != nil {
					return err
				}
			}
			return nil
		},
		Options: endpoints,
	}
}

// returns is a handler function that returns st.
func returns(st opbus.Status) opbus.HandlerFunc {
	return func(context.Context, *opbus.Event) (opbus.Status, error) { return st, nil }
}

// capture is a handler function that records the documents it sees.
func capture(docs *[]map[string]any) opbus.HandlerFunc {
	return func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
		*docs = append(*docs, ev.New)
		return opbus.Status{}, nil
	}
}

// toolNames returns the names of the tools called.
func toolNames(m *jujutest.Model) []string {
	var names []string
	for _, c := range m.Calls {
		names = append(names, c.Name)
	}
	return names
}

// run runs hook and fails the test on error.
func run(t *testing.T, c *jujutest.Harness, hook string, m *jujutest.Model) *jujutest.Model {
	t.Helper()
	out, err := c.Run(context.Background(), hook, m)
	if err != nil {
		t.Fatalf("%s: %v", hook, err)
	}
	return out
}

func TestDocument(t *testing.T) {
	var docs []map[string]any
	c := charm(handler{"all", capture(&docs), opbus.On{}})
	run(t, c, "db-relation-changed", newModel())
	if len(docs) != 1 {
		t.Fatalf("handler ran %d times, want 1", len(docs))
	}
	doc := docs[0]
	hook := doc["hook"].(map[string]any)
	if ev, _ := hook["event"].(string); len(ev) < 16 {
		t.Errorf("hook.event = %q, want a random string", ev)
	}
	delete(hook, "event")
	got, _ := json.MarshalIndent(doc, "", "  ")
	want := `{
  "app": "web",
  "config": {
    "password": "s3cret",
    "port": 8080
  },
  "hook": {
    "endpoint": "db",
    "kind": "relation-changed",
    "name": "db-relation-changed",
    "relation-id": 3,
    "remote-app": "pg",
    "remote-unit": "pg/0"
  },
  "leader": true,
  "model": {
    "name": "test",
    "uuid": "7a3b5c1d-0e2f-4a6b-8c9d-1e2f3a4b5c6d"
  },
  "relations": {
    "db": [
      {
        "app": "pg",
        "app-data": {
          "user": "web"
        },
        "id": 3,
        "units": {
          "pg/0": {
            "host": "10.0.0.1"
          },
          "pg/1": {
            "host": "10.0.0.2"
          }
        }
      }
    ],
    "peers": [
      {
        "app": "web",
        "app-data": {},
        "id": 5,
        "units": {}
      }
    ],
    "web": []
  },
  "unit": "web/0"
}`
	if string(got) != want {
		t.Errorf("document:\n%s\nwant:\n%s", got, want)
	}

	d, err := juju.DocumentOf(&opbus.Event{New: doc})
	if err != nil {
		t.Fatal(err)
	}
	if d.Hook.Kind != juju.KindRelationChanged || *d.Hook.RelationID != 3 || d.Relations["db"][0].Units["pg/1"]["host"] != "10.0.0.2" || !d.Leader {
		t.Errorf("DocumentOf: got %+v", d)
	}
}

func TestReadsOnlyWhatHandlersSubscribeTo(t *testing.T) {
	tests := []struct {
		name   string
		fields []string
		tools  []string // before state-get
	}{
		{"leader", []string{"leader"}, []string{"is-leader"}},
		{"one config item", []string{"config.port"}, []string{"config-get"}},
		{"one endpoint", []string{"relations.db[*].app-data"}, []string{"relation-ids", "relation-list", "relation-get", "relation-get", "relation-get"}},
		{"an endpoint whose relation has no unit", []string{"relations.peers"}, []string{"relation-ids", "relation-list", "relation-list", "relation-get"}},
		{"the hook", []string{"hook.name", "unit", "model.name"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := charm(handler{"h", returns(opbus.Status{}), opbus.On{Fields: tt.fields}})
			out := run(t, c, "update-status", newModel())
			want := append(tt.tools, "state-get", "state-set")
			if got := toolNames(out); !reflect.DeepEqual(got, want) {
				t.Errorf("tools called: %q, want %q", got, want)
			}
		})
	}
}

func TestRegistrationErrors(t *testing.T) {
	noEndpoints := func(c *jujutest.Harness) { c.Options = nil }
	noConfig := t.TempDir() // a charm that declares no config options
	if err := os.WriteFile(filepath.Join(noConfig, "metadata.yaml"), []byte("name: web\nrequires:\n  db:\n    interface: pgsql\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inNoConfig := func(c *jujutest.Harness) { c.Options, c.CharmDir = nil, noConfig }
	withActions := t.TempDir() // a charm with actions
	if err := errors.Join(os.WriteFile(filepath.Join(withActions, "metadata.yaml"), []byte("name: web\n"), 0o644),
		os.WriteFile(filepath.Join(withActions, "actions.yaml"), []byte("backup:\n  params:\n    target:\n      type: string\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	inWithActions := func(c *jujutest.Harness) { c.Options, c.CharmDir = nil, withActions }
	tests := []struct {
		name  string
		hs    []handler
		setup func(*jujutest.Harness)
		want  string
	}{
		{"misspelt top field", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"cofig.kind"}}}}, nil,
			`handler "h" subscribes to cofig.kind, which is not in the document`},
		{"misspelt hook field", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"hook.evnt"}}}}, nil,
			`hook.evnt, which is not in the document (did you mean hook.event? hook's fields are check, departing-unit,`},
		{"misspelt top field, near", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"relatons.db"}}}}, nil,
			`subscribes to relatons.db, which is not in the document (did you mean relations? its fields are action, app,`},
		{"misspelt model field", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"model.nmae"}}}}, nil,
			`subscribes to model.nmae, which is not in the document (did you mean model.name? model's fields are name, uuid)`},
		{"misspelt action field", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"action.parms.x"}}}}, nil,
			`subscribes to action.parms.x, which is not in the document (did you mean action.params? action's fields are name, params, uuid)`},
		{"below a scalar", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"leader.x"}}}}, nil,
			`subscribes to leader.x, which is not in the document (leader is a bool: nothing is below it)`},
		{"a relation list by key", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"relations.db.app"}}}}, nil,
			`subscribes to relations.db.app, which is not in the document (relations.db is a list of relations: address them with [*], [id=3] or [app=pg])`},
		{"misspelt relation field", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"relations.db[*].ap-data"}}}}, nil,
			`subscribes to relations.db[*].ap-data, which is not in the document (did you mean relations.db[*].app-data? a relation's fields are app, app-data, id, units)`},
		{"misspelt endpoint", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"relations.peer"}}}}, nil,
			`the charm has no endpoint "peer" (did you mean relations.peers? its endpoints are db, peers, web)`},
		{"config of a charm without config", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"config.port"}}}}, inNoConfig,
			`juju: handler "h" subscribes to config.port, but the charm declares no config options`},
		{"endpoint read from metadata.yaml", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"relations.dbs"}}}}, inNoConfig,
			`the charm has no endpoint "dbs" (did you mean relations.db? its endpoints are db)`},
		{"misspelt action parameter", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"action.params.targt"}}}}, inWithActions,
			`juju: handler "h" subscribes to action.params.targt, but no action of the charm has a parameter "targt" (did you mean action.params.target? its actions' parameters are target)`},
		{"action parameter of a charm without actions", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"action.params.target"}}}}, inNoConfig,
			`juju: handler "h" subscribes to action.params.target, but no action of the charm has parameters`},
		{"kind in another case", []handler{{"h", returns(opbus.Status{}), opbus.On{Kinds: []string{"Unit"}}}}, nil,
			`so it would never run (did you mean "unit"?)`},
		{"unknown endpoint", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"relations.istio-pliot"}}}}, nil,
			`the charm has no endpoint "istio-pliot" (its endpoints are db, peers, web)`},
		{"every endpoint, none known", []handler{{"h", returns(opbus.Status{}), opbus.On{}}}, noEndpoints,
			`handler "h" reads every relation endpoint, but the charm's endpoints are unknown`},
		{"every endpoint by pattern, none known", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"relations[*]"}}}}, noEndpoints,
			`set Options.Endpoints`},
		{"unknown kind", []handler{{"h", returns(opbus.Status{}), opbus.On{Kinds: []string{"Pod"}}}}, nil,
			`handler "h" has kind "Pod"`},
		{"kindless beside an application handler", []handler{
			{"app", returns(opbus.Status{}), opbus.On{Kinds: []string{juju.ObjectApplication}}},
			{"unit", returns(opbus.Status{}), opbus.On{}},
		}, nil, `handler "unit" lists no Kinds while application handlers exist`},
		{"bus registration error", []handler{{"h", returns(opbus.Status{}), opbus.On{Fields: []string{"config..x"}}}}, nil,
			`juju: setting up the handlers: opbus: handler "h"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := charm(tt.hs...)
			if tt.setup != nil {
				tt.setup(c)
			}
			out, err := c.Run(context.Background(), "install", newModel())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if n := len(out.Calls); n != 1 || out.Calls[0].Name != "juju-log" || out.Logs[0].Level != juju.LogError {
				t.Errorf("tools called: %q, want only the ERROR juju-log", toolNames(out))
			}
		})
	}
}

func TestEveryEndpointFromMetadata(t *testing.T) {
	dir := t.TempDir()
	meta := "name: web\nrequires:\n  db:\n    interface: pgsql\npeers:\n  peers:\n    interface: web-peers\n"
	if err := os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	c := charm(handler{"all", capture(&docs), opbus.On{}})
	c.Options, c.CharmDir = nil, dir
	run(t, c, "install", newModel())
	rels := docs[0]["relations"].(map[string]any)
	if len(rels) != 2 || rels["db"] == nil || rels["peers"] == nil {
		t.Errorf("relations read: %v, want db and peers", rels)
	}
}

func TestLevelTriggered(t *testing.T) {
	runs := 0
	c := charm(handler{"config", func(context.Context, *opbus.Event) (opbus.Status, error) {
		runs++
		return opbus.Active(""), nil
	}, opbus.On{Fields: []string{"config.port"}}})
	steps := []struct {
		hook   string
		change func(*jujutest.Model)
		runs   int
	}{
		{"install", nil, 1},
		{"config-changed", nil, 1},
		{"config-changed", func(m *jujutest.Model) { m.Config["password"] = "other" }, 1},
		{"config-changed", func(m *jujutest.Model) { m.Config["port"] = 9090.0 }, 2},
		{"update-status", nil, 2},
	}
	m := newModel()
	for i, s := range steps {
		if s.change != nil {
			s.change(m)
		}
		m = run(t, c, s.hook, m)
		if runs != s.runs {
			t.Errorf("step %d (%s): handler ran %d times in all, want %d", i, s.hook, runs, s.runs)
		}
	}
}

func TestOnHookAndOnAction(t *testing.T) {
	var ran []string
	note := func(id string) opbus.HandlerFunc {
		return func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			d, err := juju.DocumentOf(ev)
			if err != nil {
				return opbus.Status{}, err
			}
			ran = append(ran, id+":"+d.Hook.Name)
			return opbus.Status{}, nil
		}
	}
	c := charm(
		handler{"setup", note("setup"), juju.OnHook("install", "upgrade-charm")},
		handler{"db", note("db"), juju.OnHook("relation-changed")},
		handler{"any", note("any"), juju.OnHook()},
		handler{"backup", note("backup"), juju.OnAction("backup")},
	)
	m := newModel()
	for _, hook := range []string{"install", "install", "config-changed", "db-relation-changed", "actions/backup", "upgrade-charm"} {
		m = run(t, c, hook, m)
	}
	want := []string{
		"setup:install", "any:install",
		"setup:install", "any:install",
		"any:config-changed",
		"db:db-relation-changed", "any:db-relation-changed",
		"backup:backup",
		"setup:upgrade-charm", "any:upgrade-charm",
	}
	if !reflect.DeepEqual(ran, want) {
		t.Errorf("ran %q\nwant %q", ran, want)
	}
}

func TestStatusSetOnlyOnChange(t *testing.T) {
	long := strings.Repeat("é", juju.MaxStatusMessage)
	status := opbus.Blocked("no db")
	c := charm(handler{"h", func(context.Context, *opbus.Event) (opbus.Status, error) { return status, nil }, juju.OnHook()})
	steps := []struct {
		status    opbus.Status
		statusSet int
		want      jujutest.Status
	}{
		{opbus.Blocked("no db"), 1, jujutest.Status{Status: "blocked", Message: "no db"}},
		{opbus.Blocked("no db"), 0, jujutest.Status{Status: "blocked", Message: "no db"}},
		{opbus.Maintenance("upgrading"), 1, jujutest.Status{Status: "maintenance", Message: "upgrading"}},
		{opbus.Active(long), 1, jujutest.Status{Status: "active", Message: juju.TruncateMessage(long, juju.MaxStatusMessage)}},
		{opbus.Active(long), 0, jujutest.Status{Status: "active", Message: juju.TruncateMessage(long, juju.MaxStatusMessage)}},
		{opbus.Status{}, 0, jujutest.Status{Status: "active", Message: juju.TruncateMessage(long, juju.MaxStatusMessage)}},
		{opbus.Status{Level: opbus.LevelUnknown, Message: "?"}, 0, jujutest.Status{Status: "active", Message: juju.TruncateMessage(long, juju.MaxStatusMessage)}},
	}
	m := newModel()
	for i, s := range steps {
		status = s.status
		m = run(t, c, "update-status", m)
		if n := m.CallCount("status-set"); n != s.statusSet {
			t.Errorf("step %d: %d status-set calls, want %d", i, n, s.statusSet)
		}
		if m.UnitStatus != s.want {
			t.Errorf("step %d: unit status %.40q, want %.40q", i, m.UnitStatus, s.want)
		}
		if s.status.Level == opbus.LevelUnknown && m.CallCount("status-get") != 0 {
			t.Errorf("step %d: status-get called for a status that sets nothing", i)
		}
	}
	if n := len(m.UnitStatusHistory); n != 3 {
		t.Errorf("status history has %d entries, want 3", n)
	}
}

func TestHandlerErrorFailsTheHook(t *testing.T) {
	fail := true
	c := charm(
		handler{"writer", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			return opbus.Status{}, juju.FromContext(ctx).Tools.RelationSet(ctx, 3, map[string]string{"url": "http://web"})
		}, opbus.On{Fields: []string{"config"}}},
		handler{"db", func(context.Context, *opbus.Event) (opbus.Status, error) {
			if fail {
				return opbus.Status{}, errors.New("cannot reach the database")
			}
			return opbus.Active("ready"), nil
		}, opbus.On{Fields: []string{"relations.db"}}},
		handler{"config", returns(opbus.Blocked("set a port")), opbus.On{Fields: []string{"config"}}},
	)
	m, err := c.Run(context.Background(), "install", newModel())
	if err == nil || !strings.Contains(err.Error(), "cannot reach the database") {
		t.Fatalf("got %v, want the handler's error", err)
	}
	if m.State != nil || m.Relation(3).LocalUnitData != nil {
		t.Errorf("a failed hook committed state %v, relation data %v", m.State, m.Relation(3).LocalUnitData)
	}
	if n := m.CallCount("state-set") + m.CallCount("status-set"); n != 0 {
		t.Errorf("a failed hook made %d state-set or status-set calls, want none (Juju discards them)", n)
	}
	found := false
	for _, l := range m.Logs {
		if l.Level == juju.LogError && strings.Contains(l.Message, `handler \"db\"`) && strings.Contains(l.Message, "hook=install") {
			found = true
		}
	}
	if !found {
		t.Errorf("no ERROR log names the failed handler: %q", m.Logs)
	}

	// Juju retries the hook: every handler runs again, since nothing of
	// the failed dispatch was committed.
	fail = false
	m = run(t, c, "install", m)
	if m.UnitStatus != (jujutest.Status{Status: "blocked", Message: "set a port"}) || m.Relation(3).LocalUnitData["url"] != "http://web" {
		t.Errorf("after the retry: status %v, relation data %v", m.UnitStatus, m.Relation(3).LocalUnitData)
	}
}

func TestErrorSlotWithoutErrorFailsTheHook(t *testing.T) {
	c := charm()
	c.Setup = func(b *opbus.Bus) error {
		return b.Collect("disk", func(context.Context, opbus.Key, map[string]any) opbus.Status { return opbus.ErrorStatus("disk full") })
	}
	m, err := c.Run(context.Background(), "update-status", newModel())
	if err == nil || !strings.Contains(err.Error(), "disk: disk full") {
		t.Fatalf("got %v, want an error naming the slot", err)
	}
	if m.CallCount("status-set") != 0 {
		t.Error("status-set was called with an error status")
	}
}

func TestToolFailures(t *testing.T) {
	for _, tool := range []string{"state-get", "is-leader", "relation-get", "state-set", "status-get", "status-set"} {
		t.Run(tool, func(t *testing.T) {
			c := charm(handler{"h", returns(opbus.Blocked("no")), opbus.On{Fields: []string{"leader", "relations.db"}}})
			m := newModel()
			m.Failures = map[string]string{tool: "injected"}
			out, err := c.Run(context.Background(), "install", m)
			var te *juju.ToolError
			if !errors.As(err, &te) || te.Tool != tool {
				t.Fatalf("got %v, want the %s error", err, tool)
			}
			if out.State != nil {
				t.Errorf("state %v committed", out.State)
			}
			out.Failures = nil
			if out = run(t, c, "install", out); out.UnitStatus.Status != "blocked" || out.State == nil {
				t.Errorf("the next hook did not recover: status %v, state %v", out.UnitStatus, out.State)
			}
		})
	}
}

func TestApplicationStatus(t *testing.T) {
	c := charm(
		handler{"unit", returns(opbus.Active("serving")), opbus.On{Kinds: []string{juju.ObjectUnit}, Fields: []string{"leader"}}},
		handler{"units", func(context.Context, *opbus.Event) (opbus.Status, error) {
			return opbus.Waiting("waiting for peers"), nil
		}, opbus.On{Kinds: []string{juju.ObjectApplication}, Fields: []string{"relations.peers"}}},
	)
	m := run(t, c, "install", newModel())
	if m.UnitStatus != (jujutest.Status{Status: "active", Message: "serving"}) || m.AppStatus != (jujutest.Status{Status: "waiting", Message: "waiting for peers"}) {
		t.Errorf("leader: unit %v, app %v", m.UnitStatus, m.AppStatus)
	}
	m = run(t, c, "update-status", m)
	if n := m.CallCount("status-set"); n != 0 {
		t.Errorf("unchanged: %d status-set calls", n)
	}

	follower := newModel()
	follower.Leader = false
	follower = run(t, c, "install", follower)
	for _, call := range follower.Calls {
		if slices := strings.Join(call.Args, " "); strings.Contains(slices, "--application") {
			t.Errorf("a non-leader called %s %s", call.Name, slices)
		}
	}
	if follower.UnitStatus.Status != "active" || follower.AppStatus != (jujutest.Status{}) {
		t.Errorf("follower: unit %v, app %v", follower.UnitStatus, follower.AppStatus)
	}
}

func TestRelationBroken(t *testing.T) {
	var docs []map[string]any
	c := charm(handler{"db", capture(&docs), opbus.On{Fields: []string{"relations.db"}}})
	m := run(t, c, "install", newModel())

	// Older Juju still lists the broken relation in relation-ids.
	run(t, c, "db-relation-broken", m)
	// Newer Juju does not.
	gone := newModel()
	gone.Relations = gone.Relations[1:]
	gone.State = m.State
	e := juju.Env{Name: "db-relation-broken", Relation: &juju.RelationID{Endpoint: "db", ID: 3}}
	if _, err := c.RunEnv(context.Background(), e, gone); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 3 {
		t.Fatalf("handler ran %d times, want 3", len(docs))
	}
	for i, d := range docs[1:] {
		if db := d["relations"].(map[string]any)["db"].([]any); len(db) != 0 {
			t.Errorf("broken, case %d: relations.db = %v, want empty", i, db)
		}
	}
}

func TestLogs(t *testing.T) {
	c := charm(handler{"h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		log := juju.FromContext(ctx).Logger
		log.Info("configured", "port", 8080)
		log.Debug("details")
		return opbus.Active(""), nil
	}, opbus.On{Fields: []string{"config"}}})
	m := run(t, c, "install", newModel())
	want := []jujutest.LogLine{
		{Level: "INFO", Message: "configured port=8080"},
		{Level: "INFO", Message: `juju: status changed of="unit web/0" status=active was=unknown`},
	}
	if !reflect.DeepEqual(m.Logs, want) {
		t.Errorf("logs %q\nwant %q", m.Logs, want)
	}

	c.Options = &juju.Options{Endpoints: endpoints.Endpoints, LogLevel: slog.LevelDebug}
	m = run(t, c, "config-changed", newModel())
	levels := map[string]int{}
	for _, l := range m.Logs {
		levels[l.Level]++
		if strings.Contains(l.Message, "s3cret") {
			t.Errorf("a config value was logged: %q", l)
		}
	}
	if levels["DEBUG"] < 3 {
		t.Errorf("at debug level, got logs %q", m.Logs)
	}
}

func TestToolsFromContext(t *testing.T) {
	c := charm(handler{"h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		h := juju.FromContext(ctx)
		if h.Env.Unit != "web/0" {
			return opbus.Status{}, fmt.Errorf("env unit %q", h.Env.Unit)
		}
		err := errors.Join(
			h.Tools.ApplicationVersionSet(ctx, "1.2.3"),
			h.Tools.RelationSetApp(ctx, 3, map[string]string{"database": "web"}),
		)
		return opbus.Active(""), err
	}, opbus.On{Fields: []string{"leader"}}})
	m := run(t, c, "install", newModel())
	if m.WorkloadVersion != "1.2.3" || m.Relation(3).LocalAppData["database"] != "web" {
		t.Errorf("version %q, app data %v", m.WorkloadVersion, m.Relation(3).LocalAppData)
	}
	if juju.FromContext(context.Background()) != nil {
		t.Error("FromContext outside Run is not nil")
	}
}

func TestAction(t *testing.T) {
	c := charm(handler{"backup", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		d, err := juju.DocumentOf(ev)
		if err != nil {
			return opbus.Status{}, err
		}
		target, _ := d.Action.Params["target"].(string)
		return opbus.Status{}, juju.FromContext(ctx).Tools.ActionSet(ctx, map[string]string{"backup.target": target})
	}, juju.OnAction("backup")})
	m := newModel()
	m.Action = &jujutest.Action{Name: "backup", Params: map[string]any{"target": "s3"}}
	m = run(t, c, "actions/backup", m)
	if got := m.Action.Results["backup"]; !reflect.DeepEqual(got, map[string]any{"target": "s3"}) {
		t.Errorf("action results %v", m.Action.Results)
	}
	if _, err := c.Run(context.Background(), "actions/restore", m); err == nil {
		t.Error("running an action other than the model's: no error")
	}
}

func TestEventIsNewEveryDispatch(t *testing.T) {
	var docs []map[string]any
	c := charm(handler{"h", capture(&docs), juju.OnHook()})
	m := run(t, c, "install", newModel())
	run(t, c, "install", m)
	e0 := docs[0]["hook"].(map[string]any)["event"]
	e1 := docs[1]["hook"].(map[string]any)["event"]
	if e0 == e1 {
		t.Errorf("hook.event repeated: %v", e0)
	}
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	noop := func(*opbus.Bus) error { return nil }
	env := map[string]string{"JUJU_DISPATCH_PATH": "hooks/install", "JUJU_UNIT_NAME": "web/0"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name  string
		setup func(*opbus.Bus) error
		opts  *juju.Options
		want  string
	}{
		{"nil setup", nil, &juju.Options{Getenv: getenv}, "nil setup"},
		{"no environment", noop, &juju.Options{Getenv: func(string) string { return "" }, Program: "dispatch"}, "JUJU_DISPATCH_PATH is not set"},
		{"long state key", noop, &juju.Options{Getenv: getenv, StateKey: strings.Repeat("k", 257)}, "StateKey is 257 bytes, more than Juju's limit of 256"},
	}
	for _, tt := range tests {
		if err := juju.Run(ctx, tt.setup, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestWhenPanicFailsTheHook: a panic in a handler's On.When filter fails
// the hook with the panic named, instead of crashing the charm.
func TestWhenPanicFailsTheHook(t *testing.T) {
	c := charm(handler{"config", returns(opbus.Active("")), opbus.On{
		Fields: []string{"config"},
		When:   func(ev *opbus.Event) bool { panic("filter bug") },
	}})
	_, err := c.Run(context.Background(), "config-changed", newModel())
	if err == nil || !strings.Contains(err.Error(), "filter bug") {
		t.Fatalf("got %v, want the hook failed with the When panic", err)
	}
}
