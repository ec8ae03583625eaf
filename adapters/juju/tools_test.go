package juju_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// recorder is a Runner that records calls and answers with canned output.
type recorder struct {
	mu    sync.Mutex
	calls []recorded
	out   string
	err   error
}

type recorded struct {
	name  string
	args  []string
	stdin string
}

func (r *recorder) Run(_ context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, recorded{name, slices.Clone(args), string(stdin)})
	return []byte(r.out), r.err
}

var ctx = context.Background()

func TestToolsCommandLines(t *testing.T) {
	tests := []struct {
		name string
		call func(juju.Tools) error
		out  string // canned tool output
		want recorded
	}{
		{"status-set", func(t juju.Tools) error { return t.StatusSet(ctx, "active", "ready") },
			"", recorded{"status-set", []string{"--", "active", "ready"}, ""}},
		{"status-set empty message", func(t juju.Tools) error { return t.StatusSet(ctx, "blocked", "") },
			"", recorded{"status-set", []string{"--", "blocked", ""}, ""}},
		{"status-set message like a flag", func(t juju.Tools) error { return t.StatusSet(ctx, "waiting", "--application") },
			"", recorded{"status-set", []string{"--", "waiting", "--application"}, ""}},
		{"status-set --application", func(t juju.Tools) error { return t.StatusSetApp(ctx, "maintenance", "two words") },
			"", recorded{"status-set", []string{"--application", "--", "maintenance", "two words"}, ""}},
		{"status-get", func(t juju.Tools) error { _, err := t.StatusGet(ctx); return err },
			`{"status":"active"}`, recorded{"status-get", []string{"--include-data", "--format=json"}, ""}},
		{"status-get --application", func(t juju.Tools) error { _, err := t.StatusGetApp(ctx); return err },
			`{}`, recorded{"status-get", []string{"--include-data", "--format=json", "--application"}, ""}},
		{"state-get", func(t juju.Tools) error { _, err := t.StateGet(ctx); return err },
			`{}`, recorded{"state-get", []string{"--format=json"}, ""}},
		{"state-get key", func(t juju.Tools) error { _, err := t.StateGetKey(ctx, "-k"); return err },
			`""`, recorded{"state-get", []string{"--format=json", "--", "-k"}, ""}},
		{"state-set", func(t juju.Tools) error { return t.StateSet(ctx, map[string]string{"b": "2", "a": "x: \"y\"\n"}) },
			"", recorded{"state-set", []string{"--file", "-"}, "{\"a\": \"x: \\\"y\\\"\\n\", \"b\": \"2\"}\n"}},
		{"state-delete", func(t juju.Tools) error { return t.StateDelete(ctx, "k") },
			"", recorded{"state-delete", []string{"--", "k"}, ""}},
		{"is-leader", func(t juju.Tools) error { _, err := t.IsLeader(ctx); return err },
			"true", recorded{"is-leader", []string{"--format=json"}, ""}},
		{"config-get", func(t juju.Tools) error { _, err := t.ConfigGet(ctx); return err },
			`{}`, recorded{"config-get", []string{"--format=json"}, ""}},
		{"relation-ids", func(t juju.Tools) error { _, err := t.RelationIDs(ctx, "db"); return err },
			`[]`, recorded{"relation-ids", []string{"--format=json", "--", "db"}, ""}},
		{"relation-list", func(t juju.Tools) error { _, err := t.RelationList(ctx, 3); return err },
			`[]`, recorded{"relation-list", []string{"--format=json", "-r", "3"}, ""}},
		{"relation-list --app", func(t juju.Tools) error { _, err := t.RelationListApp(ctx, 3); return err },
			`"pg"`, recorded{"relation-list", []string{"--format=json", "-r", "3", "--app"}, ""}},
		{"relation-get", func(t juju.Tools) error { _, err := t.RelationGet(ctx, 3, "pg/0"); return err },
			`{}`, recorded{"relation-get", []string{"--format=json", "-r", "3", "-", "pg/0"}, ""}},
		{"relation-get --app", func(t juju.Tools) error { _, err := t.RelationGetApp(ctx, 3, "pg"); return err },
			`{}`, recorded{"relation-get", []string{"--format=json", "-r", "3", "--app", "-", "pg"}, ""}},
		{"relation-set", func(t juju.Tools) error { return t.RelationSet(ctx, 3, map[string]string{"host": "h", "gone": ""}) },
			"", recorded{"relation-set", []string{"-r", "3", "--file", "-"}, "{\"gone\": \"\", \"host\": \"h\"}\n"}},
		{"relation-set --app", func(t juju.Tools) error { return t.RelationSetApp(ctx, 3, nil) },
			"", recorded{"relation-set", []string{"-r", "3", "--app", "--file", "-"}, "{}\n"}},
		{"juju-log", func(t juju.Tools) error { return t.JujuLog(ctx, juju.LogWarning, "-careful-") },
			"", recorded{"juju-log", []string{"--log-level", "WARNING", "--", "-careful-"}, ""}},
		{"application-version-set", func(t juju.Tools) error { return t.ApplicationVersionSet(ctx, "1.2.3") },
			"", recorded{"application-version-set", []string{"--", "1.2.3"}, ""}},
		{"action-get", func(t juju.Tools) error { _, err := t.ActionGet(ctx); return err },
			`{}`, recorded{"action-get", []string{"--format=json"}, ""}},
		{"action-set", func(t juju.Tools) error {
			return t.ActionSet(ctx, map[string]string{"size": "10G", "out.path": "/tmp/a b", "cmd": "a=b; $(rm -rf /)"})
		}, "", recorded{"action-set", []string{"cmd=a=b; $(rm -rf /)", "out.path=/tmp/a b", "size=10G"}, ""}},
		{"action-fail", func(t juju.Tools) error { return t.ActionFail(ctx, "disk full") },
			"", recorded{"action-fail", []string{"--", "disk full"}, ""}},
		{"action-fail without message", func(t juju.Tools) error { return t.ActionFail(ctx, "") },
			"", recorded{"action-fail", nil, ""}},
		{"action-log", func(t juju.Tools) error { return t.ActionLog(ctx, "50%") },
			"", recorded{"action-log", []string{"--", "50%"}, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{out: tt.out}
			if err := tt.call(juju.Tools{Runner: r}); err != nil {
				t.Fatal(err)
			}
			if len(r.calls) != 1 {
				t.Fatalf("got %d calls, want 1", len(r.calls))
			}
			if got := r.calls[0]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestToolsRejectBadInput(t *testing.T) {
	tests := []struct {
		name string
		call func(juju.Tools) error
		want string
	}{
		{"status word", func(t juju.Tools) error { return t.StatusSet(ctx, "error", "x") }, `invalid status level "error"`},
		{"app status word", func(t juju.Tools) error { return t.StatusSetApp(ctx, "Active", "x") }, `invalid status level "Active"`},
		{"empty state key", func(t juju.Tools) error { return t.StateSet(ctx, map[string]string{"": "x"}) }, "empty key"},
		{"long state key", func(t juju.Tools) error {
			return t.StateSet(ctx, map[string]string{strings.Repeat("k", juju.MaxStateKey+1): "x"})
		}, "257 bytes, more than 256"},
		{"long state value", func(t juju.Tools) error {
			return t.StateSet(ctx, map[string]string{"k": strings.Repeat("v", juju.MaxStateValue+1)})
		}, `value of key "k" is 65537 bytes`},
		{"empty relation key", func(t juju.Tools) error { return t.RelationSet(ctx, 1, map[string]string{"": "x"}) }, "empty key"},
		{"action key", func(t juju.Tools) error { return t.ActionSet(ctx, map[string]string{"Bad": "x"}) }, `invalid action key "Bad"`},
		{"reserved action key", func(t juju.Tools) error { return t.ActionSet(ctx, map[string]string{"a.stdout": "x"}) }, `"stdout" is reserved`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			err := tt.call(juju.Tools{Runner: r})
			if err == nil || !strings.HasPrefix(err.Error(), "juju: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
			if len(r.calls) != 0 {
				t.Errorf("the tool ran: %q", r.calls)
			}
		})
	}
}

func TestToolsParseOutput(t *testing.T) {
	t.Run("unit status", func(t *testing.T) {
		r := &recorder{out: `{"message":"ready","status":"active","status-data":{"k":"v"}}` + "\n"}
		got, err := juju.Tools{Runner: r}.StatusGet(ctx)
		want := juju.StatusInfo{Status: "active", Message: "ready", Data: map[string]any{"k": "v"}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, %v, want %+v", got, err, want)
		}
	})
	t.Run("application status", func(t *testing.T) {
		r := &recorder{out: `{"application-status":{"message":"2 blocked","status":"blocked","status-data":{},` +
			`"units":{"app/0":{"message":"","status":"active","status-data":{}},"app/1":{"message":"no db","status":"blocked","status-data":{}}}}}`}
		got, err := juju.Tools{Runner: r}.StatusGetApp(ctx)
		want := juju.AppStatusInfo{
			StatusInfo: juju.StatusInfo{Status: "blocked", Message: "2 blocked", Data: map[string]any{}},
			Units: map[string]juju.StatusInfo{
				"app/0": {Status: "active", Data: map[string]any{}},
				"app/1": {Status: "blocked", Message: "no db", Data: map[string]any{}},
			},
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, %v, want %+v", got, err, want)
		}
	})
	t.Run("empty and null outputs", func(t *testing.T) {
		for _, out := range []string{"", "null\n"} {
			tools := juju.Tools{Runner: &recorder{out: out}}
			if m, err := tools.StateGet(ctx); err != nil || m == nil || len(m) != 0 {
				t.Errorf("StateGet on %q: got %v, %v", out, m, err)
			}
			if l, err := tools.RelationList(ctx, 1); err != nil || l == nil || len(l) != 0 {
				t.Errorf("RelationList on %q: got %v, %v", out, l, err)
			}
			if v, err := tools.StateGetKey(ctx, "k"); err != nil || v != "" {
				t.Errorf("StateGetKey on %q: got %q, %v", out, v, err)
			}
		}
	})
	t.Run("relation ids", func(t *testing.T) {
		got, err := juju.Tools{Runner: &recorder{out: `["db:12","db:3"]`}}.RelationIDs(ctx, "db")
		if err != nil || !slices.Equal(got, []int{3, 12}) {
			t.Errorf("got %v, %v, want [3 12]", got, err)
		}
		_, err = juju.Tools{Runner: &recorder{out: `["db"]`}}.RelationIDs(ctx, "db")
		if err == nil || !strings.Contains(err.Error(), `"db"`) {
			t.Errorf("got %v, want an error naming \"db\"", err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		_, err := juju.Tools{Runner: &recorder{out: "True\n"}}.IsLeader(ctx)
		if err == nil || !strings.Contains(err.Error(), "juju: is-leader: parsing output") {
			t.Errorf("got %v, want a parse error naming is-leader", err)
		}
	})
	t.Run("tool error passes through", func(t *testing.T) {
		want := &juju.ToolError{Tool: "is-leader", ExitCode: 1}
		_, err := juju.Tools{Runner: &recorder{err: want}}.IsLeader(ctx)
		var te *juju.ToolError
		if !errors.As(err, &te) || te != want {
			t.Errorf("got %v, want the runner's *ToolError", err)
		}
	})
}

func TestTruncateMessage(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"ééééé", 7, "éé…"}, // 10 bytes; 4 bytes left for runes: "éé"
		{"aéééé", 7, "aé…"}, // cut inside the second é moves back to its start
		{"✓✓✓", 5, "…"},     // no whole rune fits beside the ellipsis
		{"abcdef", 2, ""},   // too short even for the ellipsis
		{"", 0, ""},
	}
	for _, tt := range tests {
		got := juju.TruncateMessage(tt.s, tt.n)
		if got != tt.want || len(got) > max(tt.n, len(tt.s)) || !utf8.ValidString(got) {
			t.Errorf("TruncateMessage(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	r := &recorder{}
	long := strings.Repeat("€", juju.MaxStatusMessage) // 3 bytes a rune
	if err := (juju.Tools{Runner: r}).StatusSet(ctx, "active", long); err != nil {
		t.Fatal(err)
	}
	if msg := r.calls[0].args[2]; len(msg) > juju.MaxStatusMessage || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "…") {
		t.Errorf("status message of %d bytes sent, want at most %d, valid UTF-8, ending in …", len(msg), juju.MaxStatusMessage)
	}
}

func TestParseRelationID(t *testing.T) {
	tests := []struct {
		in   string
		want juju.RelationID
		ok   bool
	}{
		{"db:7", juju.RelationID{Endpoint: "db", ID: 7}, true},
		{"my-peers:0", juju.RelationID{Endpoint: "my-peers", ID: 0}, true},
		{"db", juju.RelationID{}, false},
		{"7", juju.RelationID{}, false},
		{":7", juju.RelationID{}, false},
		{"db:", juju.RelationID{}, false},
		{"db:x", juju.RelationID{}, false},
		{"db:-1", juju.RelationID{}, false},
		{"db:+1", juju.RelationID{}, false},
		{"db:07", juju.RelationID{}, false},
		{"a:b:1", juju.RelationID{}, false},
	}
	for _, tt := range tests {
		got, err := juju.ParseRelationID(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseRelationID(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), tt.in) {
			t.Errorf("error %q does not name %q", err, tt.in)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
}

func TestValidActionKey(t *testing.T) {
	for _, k := range []string{"a", "size", "out.path", "a-b.c-d", "0", "a1.b2.c3"} {
		if err := juju.ValidActionKey(k); err != nil {
			t.Errorf("ValidActionKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range []string{"", "A", "a_b", "-a", "a-", "a..b", ".a", "a.", "a b", "stdout", "x.stderr", "stdout-encoding.y"} {
		if err := juju.ValidActionKey(k); err == nil {
			t.Errorf("ValidActionKey(%q) = nil, want an error", k)
		}
	}
}

// TestToolsAgainstModel runs every client method against the jujutest model,
// so that the client and the fake agree on syntax and output shapes.
func TestToolsAgainstModel(t *testing.T) {
	m := &jujutest.Model{
		Unit:   "app/0",
		Leader: true,
		Config: map[string]any{"port": int64(8080), "name": "x"},
		Relations: []jujutest.Relation{{
			ID: 4, Endpoint: "db", RemoteApp: "pg",
			RemoteUnits:     []string{"pg/1", "pg/0"},
			RemoteUnitsData: map[string]map[string]string{"pg/0": {"host": "10.0.0.1"}},
			RemoteAppData:   map[string]string{"password": "s3cret"},
			LocalUnitData:   map[string]string{"old": "1"},
		}, {ID: 9, Endpoint: "db", RemoteApp: "mysql"}},
		State:  map[string]string{"a": "1"},
		Action: &jujutest.Action{Name: "backup", Params: map[string]any{"target": "s3"}},
	}
	tools := juju.Tools{Runner: jujutest.NewRunner(m)}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check("status-set", tools.StatusSet(ctx, "blocked", "needs db\nsecond line"))
	check("status-set --application", tools.StatusSetApp(ctx, "active", ""))
	st, err := tools.StatusGet(ctx)
	check("status-get", err)
	if st.Status != "blocked" || st.Message != "needs db\nsecond line" {
		t.Errorf("status-get: got %+v", st)
	}
	app, err := tools.StatusGetApp(ctx)
	check("status-get --application", err)
	if app.Status != "active" || app.Units["app/0"].Status != "blocked" {
		t.Errorf("status-get --application: got %+v", app)
	}
	check("state-set", tools.StateSet(ctx, map[string]string{"b": "two words", "c": "{\"json\": true}"}))
	check("state-delete", tools.StateDelete(ctx, "a"))
	state, err := tools.StateGet(ctx)
	check("state-get", err)
	if want := map[string]string{"b": "two words", "c": "{\"json\": true}"}; !reflect.DeepEqual(state, want) {
		t.Errorf("state-get: got %v, want %v (staged writes visible)", state, want)
	}
	if v, err := tools.StateGetKey(ctx, "b"); err != nil || v != "two words" {
		t.Errorf("state-get b: got %q, %v", v, err)
	}
	leader, err := tools.IsLeader(ctx)
	check("is-leader", err)
	if !leader {
		t.Error("is-leader: got false")
	}
	cfg, err := tools.ConfigGet(ctx)
	check("config-get", err)
	if !reflect.DeepEqual(cfg, m.Config) {
		t.Errorf("config-get: got %v", cfg)
	}
	ids, err := tools.RelationIDs(ctx, "db")
	check("relation-ids", err)
	if !slices.Equal(ids, []int{4, 9}) {
		t.Errorf("relation-ids: got %v", ids)
	}
	units, err := tools.RelationList(ctx, 4)
	check("relation-list", err)
	if !slices.Equal(units, []string{"pg/0", "pg/1"}) {
		t.Errorf("relation-list: got %v", units)
	}
	remote, err := tools.RelationListApp(ctx, 4)
	check("relation-list --app", err)
	if remote != "pg" {
		t.Errorf("relation-list --app: got %q", remote)
	}
	check("relation-set", tools.RelationSet(ctx, 4, map[string]string{"url": "http://x", "old": ""}))
	check("relation-set --app", tools.RelationSetApp(ctx, 4, map[string]string{"v": "1"}))
	for _, tc := range []struct {
		get  func() (map[string]string, error)
		want map[string]string
	}{
		{func() (map[string]string, error) { return tools.RelationGet(ctx, 4, "pg/0") }, map[string]string{"host": "10.0.0.1"}},
		{func() (map[string]string, error) { return tools.RelationGet(ctx, 4, "app/0") }, map[string]string{"url": "http://x"}},
		{func() (map[string]string, error) { return tools.RelationGetApp(ctx, 4, "pg") }, map[string]string{"password": "s3cret"}},
		{func() (map[string]string, error) { return tools.RelationGetApp(ctx, 4, "app") }, map[string]string{"v": "1"}},
	} {
		got, err := tc.get()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("relation-get: got %v, %v, want %v", got, err, tc.want)
		}
	}
	check("juju-log", tools.JujuLog(ctx, juju.LogDebug, "-x- $(y)"))
	check("application-version-set", tools.ApplicationVersionSet(ctx, "-1.0"))
	params, err := tools.ActionGet(ctx)
	check("action-get", err)
	if !reflect.DeepEqual(params, map[string]any{"target": "s3"}) {
		t.Errorf("action-get: got %v", params)
	}
	check("action-set", tools.ActionSet(ctx, map[string]string{"out.size": "1G", "out.path": "a=b c", "n": ""}))
	check("action-log", tools.ActionLog(ctx, "--half done"))
	check("action-fail", tools.ActionFail(ctx, "-disk full"))

	// Nothing staged is committed until the hook succeeds.
	if !reflect.DeepEqual(m.State, map[string]string{"a": "1"}) || m.Relations[0].LocalUnitData["old"] != "1" {
		t.Errorf("staged writes applied early: state %v, unit data %v", m.State, m.Relations[0].LocalUnitData)
	}
	m.Commit()
	if want := map[string]string{"b": "two words", "c": "{\"json\": true}"}; !reflect.DeepEqual(m.State, want) {
		t.Errorf("committed state: got %v, want %v", m.State, want)
	}
	if want := map[string]string{"url": "http://x"}; !reflect.DeepEqual(m.Relations[0].LocalUnitData, want) {
		t.Errorf("committed unit data: got %v, want %v", m.Relations[0].LocalUnitData, want)
	}
	if m.UnitStatus.Status != "blocked" || m.AppStatus.Status != "active" || m.WorkloadVersion != "-1.0" {
		t.Errorf("got unit %v, app %v, version %q", m.UnitStatus, m.AppStatus, m.WorkloadVersion)
	}
	if want := (jujutest.LogLine{Level: "DEBUG", Message: "-x- $(y)"}); len(m.Logs) != 1 || m.Logs[0] != want {
		t.Errorf("logs: got %v, want [%v]", m.Logs, want)
	}
	wantResults := map[string]any{"out": map[string]any{"size": "1G", "path": "a=b c"}, "n": ""}
	a := m.Action
	if !reflect.DeepEqual(a.Results, wantResults) || !a.Failed || a.FailMessage != "-disk full" || !slices.Equal(a.Logs, []string{"--half done"}) {
		t.Errorf("action: got %+v", a)
	}
}

func TestToolsReportModelErrors(t *testing.T) {
	m := &jujutest.Model{Unit: "app/1", Relations: []jujutest.Relation{{ID: 2, Endpoint: "db", RemoteApp: "pg"}}}
	tools := juju.Tools{Runner: jujutest.NewRunner(m)}
	tests := []struct {
		name string
		call func() error
		code int
		want string
	}{
		{"app status on a non-leader", func() error { return tools.StatusSetApp(ctx, "active", "") }, 1, "not the leader"},
		{"app status-get on a non-leader", func() error { _, err := tools.StatusGetApp(ctx); return err }, 1, "not the leader"},
		{"app data write on a non-leader", func() error { return tools.RelationSetApp(ctx, 2, map[string]string{"k": "v"}) }, 1, "permission denied"},
		{"own app data read on a non-leader", func() error { _, err := tools.RelationGetApp(ctx, 2, "app"); return err }, 1, "permission denied"},
		{"unknown relation", func() error { _, err := tools.RelationList(ctx, 99); return err }, 2, "relation not found"},
		{"unknown unit", func() error { _, err := tools.RelationGet(ctx, 2, "pg/7"); return err }, 1, `unit "pg/7"`},
		{"action tool outside an action", func() error { _, err := tools.ActionGet(ctx); return err }, 1, "not running an action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var te *juju.ToolError
			err := tt.call()
			if !errors.As(err, &te) || te.ExitCode != tt.code || !strings.Contains(te.Stderr, tt.want) {
				t.Errorf("got %v, want a *ToolError with code %d and %q", err, tt.code, tt.want)
			}
		})
	}
}

func ExampleTools() {
	model := &jujutest.Model{Unit: "web/0", Leader: true, State: map[string]string{"n": "1"}}
	tools := juju.Tools{Runner: jujutest.NewRunner(model)} // juju.Tools{} in a charm
	ctx := context.Background()

	if err := tools.StatusSet(ctx, juju.StatusBlocked, "waiting for a database"); err != nil {
		fmt.Println(err)
	}
	if err := tools.StateSet(ctx, map[string]string{"n": "2"}); err != nil {
		fmt.Println(err)
	}
	n, _ := tools.StateGetKey(ctx, "n")
	fmt.Println("status:", model.UnitStatus.Status, "| hook sees n =", n, "| committed n =", model.State["n"])
	model.Commit() // what Juju does when the hook exits 0
	fmt.Println("after commit n =", model.State["n"])
	// Output:
	// status: blocked | hook sees n = 2 | committed n = 1
	// after commit n = 2
}

func ExampleToolError() {
	model := &jujutest.Model{Unit: "web/1"} // not the leader
	tools := juju.Tools{Runner: jujutest.NewRunner(model)}

	err := tools.StatusSetApp(context.Background(), juju.StatusActive, "")
	var te *juju.ToolError
	if errors.As(err, &te) {
		fmt.Println(te.Tool, te.ExitCode)
	}
	fmt.Println(err)
	// Output:
	// status-set 1
	// juju: status-set exited with code 1: ERROR setting application status: this unit is not the leader
}
