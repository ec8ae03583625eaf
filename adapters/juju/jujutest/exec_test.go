package jujutest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
)

// newModel returns a model with a leader unit, config, two relations and
// an action, for tool tests.
func newModel() *Model {
	return &Model{
		Unit:   "app/0",
		Leader: true,
		Config: map[string]any{"port": 8080.0, "name": "web"},
		Relations: []Relation{
			{
				ID: 3, Endpoint: "db", RemoteApp: "pg",
				RemoteUnits:     []string{"pg/1", "pg/0"},
				RemoteUnitsData: map[string]map[string]string{"pg/0": {"host": "h0"}, "pg/2": {"host": "gone"}},
				RemoteAppData:   map[string]string{"user": "u"},
				LocalUnitData:   map[string]string{"a": "1"},
				LocalAppData:    map[string]string{"b": "2"},
			},
			{ID: 1, Endpoint: "db", RemoteApp: "mysql"},
			{ID: 5, Endpoint: "peers", RemoteApp: "app"},
		},
		State:  map[string]string{"k": "v"},
		Action: &Action{Name: "backup", Params: map[string]any{"target": "s3", "opts": map[string]any{"level": 3.0}}},
	}
}

// nonLeader returns newModel with the unit not the leader.
func nonLeader() *Model { m := newModel(); m.Leader = false; return m }

// noAction returns newModel outside an action.
func noAction() *Model { m := newModel(); m.Action = nil; return m }

func TestExec(t *testing.T) {
	tests := []struct {
		name   string
		model  func() *Model
		tool   string
		args   []string
		stdin  string
		code   int
		out    string            // exact stdout, when code is 0
		errHas string            // stderr contains, when code is not 0
		check  func(*Model) bool // the model afterwards
	}{
		// status-set / status-get
		{"status-set", newModel, "status-set", []string{"active", "all good"}, "", 0, "", "",
			func(m *Model) bool {
				return m.UnitStatus == Status{"active", "all good"} && len(m.UnitStatusHistory) == 1
			}},
		{"status-set after --", newModel, "status-set", []string{"--", "blocked", "--no db--"}, "", 0, "", "",
			func(m *Model) bool { return m.UnitStatus == Status{"blocked", "--no db--"} }},
		{"status-set without message", newModel, "status-set", []string{"maintenance"}, "", 0, "", "",
			func(m *Model) bool { return m.UnitStatus == Status{"maintenance", ""} }},
		{"status-set --application", newModel, "status-set", []string{"--application", "waiting", "x"}, "", 0, "", "",
			func(m *Model) bool { return m.AppStatus == Status{"waiting", "x"} && m.UnitStatus == Status{} }},
		{"status-set unknown word", newModel, "status-set", []string{"error", "x"}, "", 2, "",
			`invalid status "error", expected one of [maintenance blocked waiting active]`, nil},
		{"status-set no args", newModel, "status-set", nil, "", 2, "", "require <status>", nil},
		{"status-set extra args", newModel, "status-set", []string{"active", "a", "b"}, "", 2, "", `unrecognized args: ["b"]`, nil},
		{"status-set unknown flag", newModel, "status-set", []string{"--app", "active"}, "", 2, "", "flag provided but not defined: --app", nil},
		{"status-set --application non-leader", nonLeader, "status-set", []string{"--application", "active"}, "", 1, "", "not the leader",
			func(m *Model) bool { return m.AppStatus == Status{} }},
		{"status-get never set", newModel, "status-get", nil, "", 0, "unknown\n", "", nil},
		{"status-get json", newModel, "status-get", []string{"--format=json"}, "", 0, `{"status":"unknown"}` + "\n", "", nil},
		{"status-get --include-data", func() *Model { m := newModel(); m.UnitStatus = Status{"active", "hi"}; return m },
			"status-get", []string{"--include-data", "--format", "json"}, "", 0,
			`{"message":"hi","status":"active","status-data":{}}` + "\n", "", nil},
		{"status-get --application", func() *Model { m := newModel(); m.AppStatus = Status{"blocked", "b"}; return m },
			"status-get", []string{"--application", "--include-data", "--format=json"}, "", 0,
			`{"application-status":{"message":"b","status":"blocked","status-data":{},"units":{"app/0":{"message":"","status":"unknown","status-data":{}}}}}` + "\n", "", nil},
		{"status-get --application non-leader", nonLeader, "status-get", []string{"--application"}, "", 1, "", "not the leader", nil},
		{"status-get bad format", newModel, "status-get", []string{"--format=xml"}, "", 2, "", `unknown format "xml"`, nil},

		// application-version-set, juju-log, is-leader, config-get
		{"application-version-set", newModel, "application-version-set", []string{"--", "-rc1 $(x)"}, "", 0, "", "",
			func(m *Model) bool { return m.WorkloadVersion == "-rc1 $(x)" }},
		{"application-version-set no version", newModel, "application-version-set", nil, "", 2, "", "no version specified", nil},
		{"juju-log", newModel, "juju-log", []string{"--log-level", "warning", "--", "a", "-b"}, "", 0, "", "",
			func(m *Model) bool { return slices.Equal(m.Logs, []LogLine{{"WARNING", "a -b"}}) }},
		{"juju-log default level", newModel, "juju-log", []string{"hello"}, "", 0, "", "",
			func(m *Model) bool { return slices.Equal(m.Logs, []LogLine{{"INFO", "hello"}}) }},
		{"juju-log -l and --debug", newModel, "juju-log", []string{"--debug", "-l", "ERROR", "x"}, "", 0, "", "",
			func(m *Model) bool { return slices.Equal(m.Logs, []LogLine{{"DEBUG", "x"}}) }},
		{"juju-log bad level", newModel, "juju-log", []string{"--log-level=LOUD", "x"}, "", 0, "", "",
			func(m *Model) bool {
				return slices.Equal(m.Logs, []LogLine{{"WARNING", `Specified log level of "LOUD" is not valid`}, {"INFO", "x"}})
			}},
		{"juju-log no message", newModel, "juju-log", []string{"-l", "INFO"}, "", 2, "", "no message specified", nil},
		{"juju-log flag without value", newModel, "juju-log", []string{"--log-level"}, "", 2, "", "flag needs an argument: --log-level", nil},
		{"is-leader", newModel, "is-leader", []string{"--format=json"}, "", 0, "true\n", "", nil},
		{"is-leader smart", nonLeader, "is-leader", nil, "", 0, "False\n", "", nil},
		{"config-get", newModel, "config-get", []string{"--format=json"}, "", 0, `{"name":"web","port":8080}` + "\n", "", nil},
		{"config-get key", newModel, "config-get", []string{"name"}, "", 0, "web\n", "", nil},
		{"config-get missing key", newModel, "config-get", []string{"--format=json", "nope"}, "", 0, "null\n", "", nil},

		// state
		{"state-get", newModel, "state-get", []string{"--format=json"}, "", 0, `{"k":"v"}` + "\n", "", nil},
		{"state-get key", newModel, "state-get", []string{"k"}, "", 0, "v\n", "", nil},
		{"state-get missing key", newModel, "state-get", []string{"--format=json", "x"}, "", 0, `""` + "\n", "", nil},
		{"state-get --strict missing key", newModel, "state-get", []string{"--strict", "x"}, "", 1, "", `"x" not found`, nil},
		{"state-set stdin JSON", newModel, "state-set", []string{"--file", "-"}, `{"a": "1", "b": "x y"}`, 0, "", "",
			func(m *Model) bool {
				return reflect.DeepEqual(m.State, map[string]string{"k": "v"}) &&
					reflect.DeepEqual(m.Staged.State, map[string]string{"k": "v", "a": "1", "b": "x y"})
			}},
		{"state-set stdin YAML and args", newModel, "state-set", []string{"--file=-", "b=arg"}, "a: 1\nb: file\n", 0, "", "",
			func(m *Model) bool {
				return reflect.DeepEqual(m.Staged.State, map[string]string{"k": "v", "a": "1", "b": "arg"})
			}},
		{"state-set key too long", newModel, "state-set", []string{strings.Repeat("k", 257) + "=v"}, "", 1, "", "max allowed key length (256)",
			func(m *Model) bool { return m.Staged == nil }},
		{"state-set key at limit", newModel, "state-set", []string{strings.Repeat("k", 256) + "=v"}, "", 0, "", "",
			func(m *Model) bool { return len(m.Staged.State) == 2 }},
		{"state-set value too long", newModel, "state-set", []string{"--file", "-"}, `{"x": "` + strings.Repeat("v", 64<<10+1) + `"}`, 1, "",
			"max allowed value length (65536)", nil},
		{"state-set bad stdin", newModel, "state-set", []string{"--file", "-"}, "a:\n  nested: 1\n", 1, "", "cannot parse settings", nil},
		{"state-set bare arg", newModel, "state-set", []string{"novalue"}, "", 2, "", `expected "key=value", got "novalue"`, nil},
		{"state-set duplicate arg", newModel, "state-set", []string{"a=1", "a=2"}, "", 2, "", `key "a" specified more than once`, nil},
		{"state-delete", newModel, "state-delete", []string{"k"}, "", 0, "", "",
			func(m *Model) bool { return len(m.Staged.State) == 0 && m.Staged.State != nil && m.State["k"] == "v" }},
		{"state-delete no key", newModel, "state-delete", nil, "", 2, "", "specify one key", nil},

		// relations
		{"relation-ids", newModel, "relation-ids", []string{"--format=json", "db"}, "", 0, `["db:1","db:3"]` + "\n", "", nil},
		{"relation-ids unknown endpoint", newModel, "relation-ids", []string{"--format=json", "nope"}, "", 0, "[]\n", "", nil},
		{"relation-ids no endpoint", newModel, "relation-ids", nil, "", 2, "", "no endpoint name specified", nil},
		{"relation-list", newModel, "relation-list", []string{"-r", "3", "--format=json"}, "", 0, `["pg/0","pg/1"]` + "\n", "", nil},
		{"relation-list by name", newModel, "relation-list", []string{"--relation=db:1", "--format=json"}, "", 0, "[]\n", "", nil},
		{"relation-list --app", newModel, "relation-list", []string{"-r", "3", "--app"}, "", 0, "pg\n", "", nil},
		{"relation-list no id", newModel, "relation-list", nil, "", 2, "", "no relation id specified", nil},
		{"relation-list bad id", newModel, "relation-list", []string{"-r", "x"}, "", 2, "", `invalid value "x" for option -r: invalid relation id`, nil},
		{"relation-list unknown id", newModel, "relation-list", []string{"-r", "99"}, "", 2, "", `invalid value "99" for option -r: relation not found`, nil},
		{"relation-list wrong endpoint", newModel, "relation-list", []string{"-r", "peers:3"}, "", 2, "", "relation not found", nil},
		{"relation-get remote unit", newModel, "relation-get", []string{"--format=json", "-r", "3", "-", "pg/0"}, "", 0, `{"host":"h0"}` + "\n", "", nil},
		{"relation-get remote unit without data", newModel, "relation-get", []string{"--format=json", "-r", "3", "-", "pg/1"}, "", 0, "{}\n", "", nil},
		{"relation-get departed unit", newModel, "relation-get", []string{"-r", "3", "host", "pg/2"}, "", 0, "gone\n", "", nil},
		{"relation-get key", newModel, "relation-get", []string{"-r", "3", "--format=json", "host", "pg/0"}, "", 0, `"h0"` + "\n", "", nil},
		{"relation-get missing key", newModel, "relation-get", []string{"-r", "3", "--format=json", "port", "pg/0"}, "", 0, "null\n", "", nil},
		{"relation-get own unit", newModel, "relation-get", []string{"-r", "3", "--format=json", "-", "app/0"}, "", 0, `{"a":"1"}` + "\n", "", nil},
		{"relation-get remote app", newModel, "relation-get", []string{"-r", "3", "--app", "--format=json", "-", "pg"}, "", 0, `{"user":"u"}` + "\n", "", nil},
		{"relation-get remote app by unit", newModel, "relation-get", []string{"-r", "3", "-", "pg/0", "--app", "--format=json"}, "", 0, `{"user":"u"}` + "\n", "", nil},
		{"relation-get own app as leader", newModel, "relation-get", []string{"-r", "3", "--app", "--format=json", "-", "app"}, "", 0, `{"b":"2"}` + "\n", "", nil},
		{"relation-get own app as non-leader", nonLeader, "relation-get", []string{"-r", "3", "--app", "-", "app"}, "", 1, "", "permission denied", nil},
		{"relation-get unknown unit", newModel, "relation-get", []string{"-r", "3", "-", "pg/9"}, "", 1, "",
			`cannot read settings for unit "pg/9" in relation "db:3"`, nil},
		{"relation-get unknown app", newModel, "relation-get", []string{"-r", "3", "--app", "-", "redis"}, "", 1, "", `application "redis"`, nil},
		{"relation-get no member", newModel, "relation-get", []string{"-r", "3", "-"}, "", 2, "", "no unit or application specified", nil},
		{"relation-set", newModel, "relation-set", []string{"-r", "3", "--file", "-"}, `{"a": "", "c": "3"}`, 0, "", "",
			func(m *Model) bool {
				return reflect.DeepEqual(m.Staged.UnitData[3], map[string]string{"c": "3"}) &&
					reflect.DeepEqual(m.Relation(3).LocalUnitData, map[string]string{"a": "1"})
			}},
		{"relation-set args", newModel, "relation-set", []string{"-r", "1", "x=1", "y=a=b"}, "", 0, "", "",
			func(m *Model) bool {
				return reflect.DeepEqual(m.Staged.UnitData[1], map[string]string{"x": "1", "y": "a=b"})
			}},
		{"relation-set --app", newModel, "relation-set", []string{"-r", "3", "--app", "--file", "-"}, "b: \"\"\nz: 'q'\n", 0, "", "",
			func(m *Model) bool { return reflect.DeepEqual(m.Staged.AppData[3], map[string]string{"z": "q"}) }},
		{"relation-set --app non-leader", nonLeader, "relation-set", []string{"-r", "3", "--app", "x=1"}, "", 1, "", "permission denied",
			func(m *Model) bool { return m.Staged == nil }},
		{"relation-set bad id", newModel, "relation-set", []string{"-r", "7", "x=1"}, "", 2, "", "relation not found", nil},

		// actions
		{"action-get", newModel, "action-get", []string{"--format=json"}, "", 0, `{"opts":{"level":3},"target":"s3"}` + "\n", "", nil},
		{"action-get key", newModel, "action-get", []string{"target"}, "", 0, "s3\n", "", nil},
		{"action-get nested key", newModel, "action-get", []string{"--format=json", "opts.level"}, "", 0, "3\n", "", nil},
		{"action-get missing key", newModel, "action-get", []string{"--format=json", "target.x"}, "", 0, "null\n", "", nil},
		{"action-get outside an action", noAction, "action-get", nil, "", 1, "", "not running an action", nil},
		{"action-set", newModel, "action-set", []string{"a.b=1", "a.c=x=y z", "d=$(rm -rf /)"}, "", 0, "", "",
			func(m *Model) bool {
				return reflect.DeepEqual(m.Action.Results, map[string]any{"a": map[string]any{"b": "1", "c": "x=y z"}, "d": "$(rm -rf /)"})
			}},
		{"action-set replaces a value with a map", func() *Model { m := newModel(); m.Action.Results = map[string]any{"a": "x"}; return m },
			"action-set", []string{"a.b=1"}, "", 0, "", "",
			func(m *Model) bool {
				return reflect.DeepEqual(m.Action.Results, map[string]any{"a": map[string]any{"b": "1"}})
			}},
		{"action-set bad key", newModel, "action-set", []string{"ok=1", "Bad=1"}, "", 2, "", `key "Bad" must start and end with lowercase alphanumeric`,
			func(m *Model) bool { return m.Action.Results == nil }},
		{"action-set reserved key", newModel, "action-set", []string{"x.stdout=1"}, "", 2, "", `cannot set reserved action key "stdout"`, nil},
		{"action-set no equals", newModel, "action-set", []string{"x"}, "", 2, "", `argument "x" must be of the form key...=value`, nil},
		{"action-set outside an action", noAction, "action-set", []string{"a=1"}, "", 1, "", "not running an action", nil},
		{"action-fail", newModel, "action-fail", []string{"--", "-disk full"}, "", 0, "", "",
			func(m *Model) bool { return m.Action.Failed && m.Action.FailMessage == "-disk full" }},
		{"action-fail default message", newModel, "action-fail", nil, "", 0, "", "",
			func(m *Model) bool {
				return m.Action.Failed && strings.HasPrefix(m.Action.FailMessage, "action failed without reason")
			}},
		{"action-fail two messages", newModel, "action-fail", []string{"a", "b"}, "", 2, "", "unrecognized args", nil},
		{"action-log", newModel, "action-log", []string{"--", "50%", "done"}, "", 0, "", "",
			func(m *Model) bool { return slices.Equal(m.Action.Logs, []string{"50% done"}) }},
		{"action-log outside an action", noAction, "action-log", []string{"x"}, "", 1, "", "not running an action", nil},

		{"unknown tool", newModel, "leader-set", []string{"a=1"}, "", 127, "", `unknown hook tool "leader-set"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.model()
			var stdin []byte
			if tt.stdin != "" {
				stdin = []byte(tt.stdin)
			}
			out, errOut, code := m.Exec(tt.tool, tt.args, stdin)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if code == 0 && string(out) != tt.out {
				t.Errorf("stdout %q, want %q", out, tt.out)
			}
			if code != 0 && (!strings.HasPrefix(string(errOut), "ERROR ") || !strings.Contains(string(errOut), tt.errHas)) {
				t.Errorf("stderr %q, want ERROR … %q", errOut, tt.errHas)
			}
			if code == 0 && len(errOut) != 0 {
				t.Errorf("stderr %q on success", errOut)
			}
			want := Call{Name: tt.tool, Args: tt.args, Exit: tt.code}
			if len(m.Calls) != 1 || !reflect.DeepEqual(m.Calls[0], want) {
				t.Errorf("calls %v, want [%v]", m.Calls, want)
			}
			if tt.check != nil && !tt.check(m) {
				t.Errorf("model afterwards: %+v (staged %+v)", m, m.Staged)
			}
		})
	}
}

func TestExecReadsSeeStagedWrites(t *testing.T) {
	m := newModel()
	run := func(stdin string, tool string, args ...string) string {
		t.Helper()
		out, errOut, code := m.Exec(tool, args, []byte(stdin))
		if code != 0 {
			t.Fatalf("%s %q: exit %d: %s", tool, args, code, errOut)
		}
		return string(out)
	}
	run("", "state-set", "n=1")
	run("", "state-set", "n=2", "o=3")
	run("", "state-delete", "k")
	if got := run("", "state-get", "--format=json"); got != `{"n":"2","o":"3"}`+"\n" {
		t.Errorf("state-get: got %q", got)
	}
	run("", "relation-set", "-r", "3", "x=1")
	run("", "relation-set", "-r", "3", "a=")
	if got := run("", "relation-get", "--format=json", "-r", "3", "-", "app/0"); got != `{"x":"1"}`+"\n" {
		t.Errorf("relation-get: got %q", got)
	}
	run("", "relation-set", "-r", "3", "--app", "b=")
	if got := run("", "relation-get", "--format=json", "--app", "-r", "3", "-", "app"); got != "{}\n" {
		t.Errorf("relation-get --app: got %q", got)
	}

	d := cloneModel(t, m)
	d.Discard()
	if d.Staged != nil || !reflect.DeepEqual(d.State, map[string]string{"k": "v"}) || d.Relation(3).LocalUnitData["a"] != "1" {
		t.Errorf("after Discard: %+v", d)
	}
	m.Commit()
	if m.Staged != nil || !reflect.DeepEqual(m.State, map[string]string{"n": "2", "o": "3"}) {
		t.Errorf("after Commit: state %v", m.State)
	}
	r := m.Relation(3)
	if !reflect.DeepEqual(r.LocalUnitData, map[string]string{"x": "1"}) || len(r.LocalAppData) != 0 || r.LocalAppData == nil {
		t.Errorf("after Commit: unit data %v, app data %#v", r.LocalUnitData, r.LocalAppData)
	}
	if !reflect.DeepEqual(m.Relation(1).LocalUnitData, map[string]string(nil)) {
		t.Errorf("untouched relation changed: %v", m.Relation(1).LocalUnitData)
	}
}

func TestExecStateSetFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(path, []byte("a: from file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newModel()
	if _, errOut, code := m.Exec("state-set", []string{"--file", path}, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if m.Staged.State["a"] != "from file" {
		t.Errorf("got %v", m.Staged.State)
	}
	if _, errOut, code := m.Exec("state-set", []string{"--file", path + ".missing"}, nil); code != 1 || !strings.Contains(string(errOut), "no such file") {
		t.Errorf("missing file: exit %d, %s", code, errOut)
	}
}

// TestActionKeysAgreeWithClient checks that the fake accepts exactly the
// keys juju.ValidActionKey accepts.
func TestActionKeysAgreeWithClient(t *testing.T) {
	for _, k := range []string{"a", "a-b", "a.b", "0", "a1.b2", "", "A", "a_b", "-a", "a-", "a..b", ".a", "a.", "a b", "stdout", "x.stderr", "stdout-encoding"} {
		m := newModel()
		_, _, code := m.Exec("action-set", []string{k + "=v"}, nil)
		if fakeOK, clientOK := code == 0, juju.ValidActionKey(k) == nil; fakeOK != clientOK {
			t.Errorf("key %q: fake accepts %v, juju.ValidActionKey accepts %v", k, fakeOK, clientOK)
		}
	}
}

func TestToolNames(t *testing.T) {
	want := []string{
		"action-fail", "action-get", "action-log", "action-set", "add-metric", "application-version-set",
		"config-get", "is-leader", "juju-log", "relation-get", "relation-ids", "relation-list",
		"relation-set", "secret-add", "secret-get", "secret-grant", "secret-ids", "secret-info-get",
		"secret-remove", "secret-revoke", "secret-set", "state-delete", "state-get", "state-set",
		"status-get", "status-set",
	}
	if got := ToolNames(); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, name := range want {
		if !IsTool(name) {
			t.Errorf("IsTool(%q) = false", name)
		}
	}
	if IsTool("leader-set") {
		t.Error(`IsTool("leader-set") = true`)
	}
}

func TestCallCount(t *testing.T) {
	m := newModel()
	for i := range 3 {
		m.Exec("juju-log", []string{fmt.Sprint(i)}, nil)
	}
	m.Exec("status-set", []string{"bogus"}, nil)
	if got := m.CallCount("juju-log"); got != 3 {
		t.Errorf("juju-log calls: got %d, want 3", got)
	}
	if got := m.CallCount("status-set"); got != 1 {
		t.Errorf("status-set calls (failed ones count): got %d, want 1", got)
	}
	if m.Calls[3].Exit != 2 {
		t.Errorf("failed call recorded with exit %d, want 2", m.Calls[3].Exit)
	}
}
