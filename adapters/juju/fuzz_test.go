package juju

import (
	"context"
	"maps"
	"testing"
)

// FuzzParseEnv: any hook environment parses to an Env or an error, never a
// panic, and a parsed Env's variables parse back to the same Env.
func FuzzParseEnv(f *testing.F) {
	f.Add("hooks/install", "gateway/0", "", "", "", "dispatch")
	f.Add("hooks/db-relation-changed", "app/0", "db", "db:3", "pg/0", "dispatch")
	f.Add("actions/backup", "app/1", "", "", "", "dispatch")
	f.Add("", "app/0", "", "", "", "hooks/config-changed")
	f.Add("hooks/x-relation-broken", "a/0", "x", "x:-1", "", "")
	f.Fuzz(func(t *testing.T, dispatch, unit, relation, relationID, remote, argv0 string) {
		vars := map[string]string{
			"JUJU_DISPATCH_PATH": dispatch, "JUJU_UNIT_NAME": unit, "JUJU_RELATION": relation,
			"JUJU_RELATION_ID": relationID, "JUJU_REMOTE_UNIT": remote, "JUJU_REMOTE_APP": remote,
			"JUJU_ACTION_NAME": "backup", "JUJU_ACTION_UUID": "1", "JUJU_MODEL_NAME": "m",
		}
		env, err := ParseEnv(func(k string) string { return vars[k] }, argv0)
		if err != nil {
			return
		}
		back := env.Vars()
		again, err := ParseEnv(func(k string) string { return back[k] }, argv0)
		if err != nil {
			t.Fatalf("Vars() of a parsed Env does not parse: %v (%v)", err, back)
		}
		if !maps.Equal(again.Vars(), back) {
			t.Fatalf("round trip changed the environment:\n%v\n%v", back, again.Vars())
		}
	})
}

type fuzzRunner []byte

func (r fuzzRunner) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	return r, nil
}

// FuzzToolOutput: whatever a hook tool prints, the typed client returns a
// value or an error, never a panic.
func FuzzToolOutput(f *testing.F) {
	for _, s := range []string{
		`{"status":"active","message":"","status-data":{}}`,
		`{"application-status":{"status":"blocked","message":"m","units":{"a/0":{"status":"active"}}}}`,
		`{"k":"v"}`, `[1,2]`, `true`, `null`, `"x"`, `["db:1","db:2"]`, `{"a":{"b":[1,{"c":null}]}}`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		ctx := context.Background()
		tools := Tools{Runner: fuzzRunner(out)}
		_, _ = tools.StatusGet(ctx)
		_, _ = tools.StatusGetApp(ctx)
		_, _ = tools.StateGet(ctx)
		_, _ = tools.StateGetKey(ctx, "k")
		_, _ = tools.IsLeader(ctx)
		_, _ = tools.ConfigGet(ctx)
		_, _ = tools.RelationIDs(ctx, "db")
		_, _ = tools.RelationList(ctx, 1)
		_, _ = tools.RelationListApp(ctx, 1)
		_, _ = tools.RelationGet(ctx, 1, "a/0")
		_, _ = tools.RelationGetApp(ctx, 1, "a")
		_, _ = tools.ActionGet(ctx)
	})
}
