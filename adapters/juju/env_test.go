package juju

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
)

// envOf returns a getenv over the unit's common variables plus vars.
func envOf(vars map[string]string) func(string) string {
	all := map[string]string{
		"JUJU_UNIT_NAME":  "web/3",
		"JUJU_MODEL_NAME": "prod",
		"JUJU_MODEL_UUID": "5c1a",
		"JUJU_CHARM_DIR":  "/var/lib/juju/agents/unit-web-3/charm",
		"JUJU_VERSION":    "3.6.1",
	}
	maps.Copy(all, vars)
	return func(k string) string { return all[k] }
}

// common is the Env the common variables give.
func common(e Env) *Env {
	e.Unit, e.App = "web/3", "web"
	e.ModelName, e.ModelUUID = "prod", "5c1a"
	e.CharmDir, e.Version = "/var/lib/juju/agents/unit-web-3/charm", "3.6.1"
	return &e
}

func TestParseEnv(t *testing.T) {
	rel := func(ep string, id int) *RelationID { return &RelationID{Endpoint: ep, ID: id} }
	tests := []struct {
		name  string
		vars  map[string]string
		argv0 string
		want  *Env
	}{
		{"install", map[string]string{"JUJU_DISPATCH_PATH": "hooks/install"}, "./dispatch",
			common(Env{DispatchPath: "hooks/install", Name: "install", Kind: KindInstall})},
		{"config-changed", map[string]string{"JUJU_DISPATCH_PATH": "hooks/config-changed"}, "dispatch",
			common(Env{DispatchPath: "hooks/config-changed", Name: "config-changed", Kind: KindConfigChanged})},
		{"leader-elected", map[string]string{"JUJU_DISPATCH_PATH": "hooks/leader-elected"}, "dispatch",
			common(Env{DispatchPath: "hooks/leader-elected", Name: "leader-elected", Kind: KindLeaderElected})},
		{"old-style hook symlink", nil, "/var/lib/juju/agents/unit-web-3/charm/hooks/start",
			common(Env{DispatchPath: "hooks/start", Name: "start", Kind: KindStart})},
		{"old-style action", map[string]string{"JUJU_ACTION_NAME": "backup"}, "/charm/actions/backup",
			common(Env{DispatchPath: "actions/backup", Name: "backup", Kind: KindAction, ActionName: "backup"})},
		{"relation-joined", map[string]string{
			"JUJU_DISPATCH_PATH": "hooks/db-relation-joined", "JUJU_RELATION": "db", "JUJU_RELATION_ID": "db:7",
			"JUJU_REMOTE_UNIT": "pg/0", "JUJU_REMOTE_APP": "pg"}, "dispatch",
			common(Env{DispatchPath: "hooks/db-relation-joined", Name: "db-relation-joined", Kind: KindRelationJoined,
				Relation: rel("db", 7), RemoteUnit: "pg/0", RemoteApp: "pg"})},
		{"relation-changed for app data has no remote unit", map[string]string{
			"JUJU_DISPATCH_PATH": "hooks/db-relation-changed", "JUJU_RELATION_ID": "db:7", "JUJU_REMOTE_APP": "pg"}, "dispatch",
			common(Env{DispatchPath: "hooks/db-relation-changed", Name: "db-relation-changed", Kind: KindRelationChanged,
				Relation: rel("db", 7), RemoteApp: "pg"})},
		{"relation-departed derives the remote app", map[string]string{
			"JUJU_DISPATCH_PATH": "hooks/my-peers-relation-departed", "JUJU_RELATION_ID": "my-peers:0",
			"JUJU_REMOTE_UNIT": "web/1", "JUJU_DEPARTING_UNIT": "web/1"}, "dispatch",
			common(Env{DispatchPath: "hooks/my-peers-relation-departed", Name: "my-peers-relation-departed", Kind: KindRelationDeparted,
				Relation: rel("my-peers", 0), RemoteUnit: "web/1", RemoteApp: "web", DepartingUnit: "web/1"})},
		{"relation-broken", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-broken", "JUJU_RELATION_ID": "db:7"}, "dispatch",
			common(Env{DispatchPath: "hooks/db-relation-broken", Name: "db-relation-broken", Kind: KindRelationBroken, Relation: rel("db", 7)})},
		{"relation-created", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-created", "JUJU_RELATION_ID": "db:8", "JUJU_REMOTE_APP": "pg"}, "dispatch",
			common(Env{DispatchPath: "hooks/db-relation-created", Name: "db-relation-created", Kind: KindRelationCreated, Relation: rel("db", 8), RemoteApp: "pg"})},
		{"absolute dispatch path takes its last element", map[string]string{"JUJU_DISPATCH_PATH": "/var/lib/juju/agents/unit-web-3/charm/hooks/update-status"}, "dispatch",
			common(Env{DispatchPath: "/var/lib/juju/agents/unit-web-3/charm/hooks/update-status", Name: "update-status", Kind: KindUpdateStatus})},
		{"absolute dispatch path of an event of the user's", map[string]string{"JUJU_DISPATCH_PATH": "/tmp/rotate-logs"}, "dispatch",
			common(Env{DispatchPath: "/tmp/rotate-logs", Name: "rotate-logs", Kind: KindUnknown})},
		{"absolute dispatch path of an action", map[string]string{"JUJU_DISPATCH_PATH": "/srv/charm/actions/backup", "JUJU_ACTION_NAME": "backup"}, "dispatch",
			common(Env{DispatchPath: "/srv/charm/actions/backup", Name: "backup", Kind: KindAction, ActionName: "backup"})},
		{"meter-status-changed", map[string]string{"JUJU_DISPATCH_PATH": "hooks/meter-status-changed", "JUJU_METER_STATUS": "AMBER", "JUJU_METER_INFO": "soon over"}, "dispatch",
			common(Env{DispatchPath: "hooks/meter-status-changed", Name: "meter-status-changed", Kind: KindMeterStatusChanged, MeterStatus: "AMBER", MeterInfo: "soon over"})},
		{"pebble-ready", map[string]string{"JUJU_DISPATCH_PATH": "hooks/nginx-proxy-pebble-ready", "JUJU_WORKLOAD_NAME": "nginx-proxy"}, "dispatch",
			common(Env{DispatchPath: "hooks/nginx-proxy-pebble-ready", Name: "nginx-proxy-pebble-ready", Kind: KindPebbleReady, Workload: "nginx-proxy"})},
		{"pebble-custom-notice", map[string]string{"JUJU_DISPATCH_PATH": "hooks/app-pebble-custom-notice", "JUJU_WORKLOAD_NAME": "app",
			"JUJU_NOTICE_ID": "12", "JUJU_NOTICE_TYPE": "custom", "JUJU_NOTICE_KEY": "example.com/done"}, "dispatch",
			common(Env{DispatchPath: "hooks/app-pebble-custom-notice", Name: "app-pebble-custom-notice", Kind: KindPebbleCustomNotice,
				Workload: "app", NoticeID: "12", NoticeType: "custom", NoticeKey: "example.com/done"})},
		{"pebble-check-failed", map[string]string{"JUJU_DISPATCH_PATH": "hooks/app-pebble-check-failed", "JUJU_WORKLOAD_NAME": "app",
			"JUJU_PEBBLE_CHECK_NAME": "http"}, "dispatch",
			common(Env{DispatchPath: "hooks/app-pebble-check-failed", Name: "app-pebble-check-failed", Kind: KindPebbleCheckFailed,
				Workload: "app", CheckName: "http"})},
		{"storage-attached", map[string]string{"JUJU_DISPATCH_PATH": "hooks/data-storage-attached", "JUJU_STORAGE_ID": "data/0",
			"JUJU_STORAGE_LOCATION": "/srv/data"}, "dispatch",
			common(Env{DispatchPath: "hooks/data-storage-attached", Name: "data-storage-attached", Kind: KindStorageAttached,
				StorageID: "data/0", StorageLocation: "/srv/data"})},
		{"secret-changed", map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-changed", "JUJU_SECRET_ID": "secret:abc",
			"JUJU_SECRET_LABEL": "db-pass"}, "dispatch",
			common(Env{DispatchPath: "hooks/secret-changed", Name: "secret-changed", Kind: KindSecretChanged, SecretID: "secret:abc", SecretLabel: "db-pass"})},
		{"secret-remove", map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-remove", "JUJU_SECRET_ID": "secret:abc",
			"JUJU_SECRET_REVISION": "3"}, "dispatch",
			common(Env{DispatchPath: "hooks/secret-remove", Name: "secret-remove", Kind: KindSecretRemove, SecretID: "secret:abc", SecretRevision: 3})},
		{"action", map[string]string{"JUJU_DISPATCH_PATH": "actions/backup", "JUJU_ACTION_NAME": "backup", "JUJU_ACTION_UUID": "42"}, "dispatch",
			common(Env{DispatchPath: "actions/backup", Name: "backup", Kind: KindAction, ActionName: "backup", ActionUUID: "42"})},
		{"unknown hook is not an error", map[string]string{"JUJU_DISPATCH_PATH": "hooks/future-thing"}, "dispatch",
			common(Env{DispatchPath: "hooks/future-thing", Name: "future-thing", Kind: KindUnknown})},
		{"a bare suffix is not a relation hook", map[string]string{"JUJU_DISPATCH_PATH": "hooks/-relation-joined"}, "dispatch",
			common(Env{DispatchPath: "hooks/-relation-joined", Name: "-relation-joined", Kind: KindUnknown})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnv(envOf(tt.vars), tt.argv0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			// Vars is the inverse of ParseEnv.
			vars := got.Vars()
			again, err := ParseEnv(func(k string) string { return vars[k] }, "dispatch")
			if err != nil {
				t.Fatalf("ParseEnv(Vars()): %v", err)
			}
			if !reflect.DeepEqual(again, tt.want) {
				t.Errorf("ParseEnv(Vars()):\ngot  %+v\nwant %+v", again, tt.want)
			}
		})
	}
}

func TestParseEnvErrors(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		argv0   string
		missing bool     // the error wraps ErrMissingEnv
		want    []string // the error names these
	}{
		{"no unit", map[string]string{"JUJU_DISPATCH_PATH": "hooks/install", "JUJU_UNIT_NAME": ""}, "dispatch",
			true, []string{"JUJU_UNIT_NAME", `hook "install"`}},
		{"relation hook without relation id", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed"}, "dispatch",
			true, []string{"JUJU_RELATION_ID", `"db-relation-changed"`}},
		{"relation-joined without anything", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-joined"}, "dispatch",
			true, []string{"JUJU_RELATION_ID, JUJU_REMOTE_UNIT"}},
		{"action without name", map[string]string{"JUJU_DISPATCH_PATH": "actions/backup"}, "dispatch",
			true, []string{"JUJU_ACTION_NAME", `action "backup"`}},
		{"pebble-ready without workload", map[string]string{"JUJU_DISPATCH_PATH": "hooks/app-pebble-ready"}, "dispatch",
			true, []string{"JUJU_WORKLOAD_NAME"}},
		{"custom notice without notice", map[string]string{"JUJU_DISPATCH_PATH": "hooks/app-pebble-custom-notice", "JUJU_WORKLOAD_NAME": "app"}, "dispatch",
			true, []string{"JUJU_NOTICE_ID, JUJU_NOTICE_TYPE, JUJU_NOTICE_KEY"}},
		{"check hook without check", map[string]string{"JUJU_DISPATCH_PATH": "hooks/app-pebble-check-recovered", "JUJU_WORKLOAD_NAME": "app"}, "dispatch",
			true, []string{"JUJU_PEBBLE_CHECK_NAME"}},
		{"storage without id", map[string]string{"JUJU_DISPATCH_PATH": "hooks/data-storage-detaching"}, "dispatch",
			true, []string{"JUJU_STORAGE_ID"}},
		{"secret without id", map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-rotate"}, "dispatch",
			true, []string{"JUJU_SECRET_ID"}},
		{"secret-expired without revision", map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-expired", "JUJU_SECRET_ID": "s"}, "dispatch",
			true, []string{"JUJU_SECRET_REVISION"}},
		{"no dispatch path, run as dispatch", nil, "/charm/dispatch", true, []string{"JUJU_DISPATCH_PATH", `"/charm/dispatch"`}},
		{"no dispatch path, no program name", nil, "", true, []string{"JUJU_DISPATCH_PATH"}},
		{"malformed relation id", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed", "JUJU_RELATION_ID": "db"}, "dispatch",
			false, []string{"JUJU_RELATION_ID", `"db"`}},
		{"relation id of another endpoint", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed", "JUJU_RELATION_ID": "cache:1"}, "dispatch",
			false, []string{"JUJU_RELATION_ID", `"cache:1"`, `"db"`}},
		{"JUJU_RELATION of another endpoint", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed", "JUJU_RELATION_ID": "db:1", "JUJU_RELATION": "cache"}, "dispatch",
			false, []string{"JUJU_RELATION", `"cache"`}},
		{"workload of another container", map[string]string{"JUJU_DISPATCH_PATH": "hooks/app-pebble-ready", "JUJU_WORKLOAD_NAME": "db"}, "dispatch",
			false, []string{"JUJU_WORKLOAD_NAME", `"db"`, `"app"`}},
		{"action name mismatch", map[string]string{"JUJU_DISPATCH_PATH": "actions/backup", "JUJU_ACTION_NAME": "restore"}, "dispatch",
			false, []string{"JUJU_ACTION_NAME", `"restore"`, `"backup"`}},
		{"malformed unit", map[string]string{"JUJU_DISPATCH_PATH": "hooks/install", "JUJU_UNIT_NAME": "web"}, "dispatch",
			false, []string{"JUJU_UNIT_NAME", `"web"`}},
		{"malformed remote unit", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-joined", "JUJU_RELATION_ID": "db:1", "JUJU_REMOTE_UNIT": "pg/x"}, "dispatch",
			false, []string{"JUJU_REMOTE_UNIT", `"pg/x"`}},
		{"malformed secret revision", map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-remove", "JUJU_SECRET_ID": "s", "JUJU_SECRET_REVISION": "two"}, "dispatch",
			false, []string{"JUJU_SECRET_REVISION", `"two"`}},
		{"malformed dispatch path", map[string]string{"JUJU_DISPATCH_PATH": "bin/install"}, "dispatch",
			false, []string{"JUJU_DISPATCH_PATH", `"bin/install"`}},
		{"nested dispatch path", map[string]string{"JUJU_DISPATCH_PATH": "hooks/a/b"}, "dispatch",
			false, []string{"JUJU_DISPATCH_PATH", `"hooks/a/b"`}},
		{"absolute dispatch path of the root", map[string]string{"JUJU_DISPATCH_PATH": "/"}, "dispatch",
			false, []string{"JUJU_DISPATCH_PATH", `"/"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnv(envOf(tt.vars), tt.argv0)
			if err == nil {
				t.Fatalf("got %+v, want an error", got)
			}
			if got != nil {
				t.Errorf("got %+v with the error, want nil", got)
			}
			if errors.Is(err, ErrMissingEnv) != tt.missing {
				t.Errorf("errors.Is(%v, ErrMissingEnv) = %v, want %v", err, !tt.missing, tt.missing)
			}
			if !strings.HasPrefix(err.Error(), "juju: ") {
				t.Errorf("error %q lacks the juju: prefix", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

func ExampleParseEnv() {
	vars := map[string]string{
		"JUJU_DISPATCH_PATH": "hooks/db-relation-joined",
		"JUJU_UNIT_NAME":     "web/0",
		"JUJU_RELATION":      "db",
		"JUJU_RELATION_ID":   "db:7",
		"JUJU_REMOTE_UNIT":   "pg/1",
	}
	env, err := ParseEnv(func(k string) string { return vars[k] }, "./dispatch")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.Kind, env.Endpoint(), env.Relation, env.RemoteUnit, env.RemoteApp)

	delete(vars, "JUJU_RELATION_ID")
	_, err = ParseEnv(func(k string) string { return vars[k] }, "./dispatch")
	fmt.Println(err)
	// Output:
	// relation-joined db db:7 pg/1 pg
	// juju: missing hook environment: hook "db-relation-joined" needs JUJU_RELATION_ID
}

func TestKindPredicatesAndEndpoint(t *testing.T) {
	tests := []struct {
		name                            string
		kind                            Kind
		relation, storage, work, secret bool
		endpoint                        string
	}{
		{"install", KindInstall, false, false, false, false, ""},
		{"db-relation-joined", KindRelationJoined, true, false, false, false, "db"},
		{"a-b-relation-broken", KindRelationBroken, true, false, false, false, "a-b"},
		{"data-storage-attached", KindStorageAttached, false, true, false, false, "data"},
		{"app-pebble-check-failed", KindPebbleCheckFailed, false, false, true, false, "app"},
		{"secret-rotate", KindSecretRotate, false, false, false, true, ""},
		{"backup", KindAction, false, false, false, false, ""},
	}
	for _, tt := range tests {
		k := tt.kind
		if k.IsRelation() != tt.relation || k.IsStorage() != tt.storage || k.IsWorkload() != tt.work || k.IsSecret() != tt.secret {
			t.Errorf("%s: predicates wrong", k)
		}
		if k != KindAction {
			if got := HookKind(tt.name); got != k {
				t.Errorf("HookKind(%q) = %q, want %q", tt.name, got, k)
			}
		}
		e := &Env{Name: tt.name, Kind: k}
		if got := e.Endpoint(); got != tt.endpoint {
			t.Errorf("%s: Endpoint() = %q, want %q", tt.name, got, tt.endpoint)
		}
	}
}
