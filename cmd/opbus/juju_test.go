package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/explain"
)

// TestExplainJuju runs a charm's install and config-changed hooks with
// jujutest, then the command as a process on what the state-get hook
// tool prints for the unit's state key (plain and --format=json, on
// standard input and from a file): it explains the unit's record.
func TestExplainJuju(t *testing.T) {
	charm := &jujutest.Harness{
		Options: &juju.Options{Endpoints: []string{}},
		Setup: func(b *opbus.Bus) error {
			if err := b.Handle("config", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
				if name, _ := opbus.Get[string](ev.New, "config.name"); name == "" {
					return opbus.Blocked("set config item 'name'"), nil
				}
				return opbus.Active(""), nil
			}, opbus.On{Fields: []string{"config.name"}}); err != nil {
				return err
			}
			return b.Handle("poll", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
				ev.Again(time.Minute)
				return opbus.Waiting("workload starting"), nil
			}, opbus.On{Fields: []string{"config"}})
		}}
	model := &jujutest.Model{Unit: "hello/0", Config: map[string]any{"name": ""}}
	var err error
	for _, hook := range []string{"install", "config-changed"} {
		if model, err = charm.Run(context.Background(), hook, model); err != nil {
			t.Fatalf("%s: %v", hook, err)
		}
	}
	stateGet := func(args ...string) string {
		out, err := jujutest.NewRunner(model).Run(context.Background(), "state-get", args, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	plain, asJSON := stateGet(juju.DefaultStateKey), stateGet("--format=json", juju.DefaultStateKey)

	out, errOut, code := commandIn(t, plain, "explain", "-juju-state", "-", "unit", "hello/0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"unit hello/0 (from the record, at ",
		"status: blocked \"set config item 'name'\"\n",
		"config: ran\n",
		"  slot: blocked \"set config item 'name'\"\n",
		"poll: scheduled\n  it handled a value; a schedule (On.Every or Event.Again) of 1m0s: next run due ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	file := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(file, []byte(asJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = command(t, "explain", "-juju-state", file, "-json")
	var rs []explain.Report
	if code != 0 || json.Unmarshal([]byte(out), &rs) != nil {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	var keys []string
	for _, r := range rs {
		keys = append(keys, r.Key.String())
	}
	if len(rs) == 0 || keys[len(keys)-1] != "unit hello/0" || len(rs[len(rs)-1].Handlers) != 2 {
		t.Errorf("every record: got %q, want the unit's last, with two handlers", keys)
	}

	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{plain, []string{"unit", "other/0"}, `no record of unit other/0: it holds`},
		{"", nil, "empty: expected what state-get prints"},
		{"[1]", nil, "not the records of opbus"},
		{"{}", nil, "no opbus records in it"},
	} {
		_, errOut, code := commandIn(t, tc.stdin, append([]string{"explain", "-juju-state", "-"}, tc.args...)...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q %q: exit %d, stderr %q; want exit 1 and %q", tc.stdin, tc.args, code, errOut, tc.want)
		}
	}
	if _, errOut, code := command(t, "explain", "-juju-state", "-", "-store", "x"); code != 2 || !strings.Contains(errOut, "both given") {
		t.Errorf("-store with -juju-state: exit %d, %s", code, errOut)
	}
}
