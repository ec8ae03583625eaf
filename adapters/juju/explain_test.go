package juju_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// TestExplain runs a charm's install and config-changed hooks with
// jujutest, then juju.Explain with the same handlers and the hook tools
// reading the unit's state: the unit's record is explained (the blocked
// config slot, poll scheduled by Again), the handler that has not run yet
// (skipped by its When, so nothing recorded) is never-ran, the
// application-only one is filtered by kind, and the application, which
// has no record, says so.
func TestExplain(t *testing.T) {
	setup := func(b *opbus.Bus) error {
		return errors.Join(
			b.Handle("config", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
				if name, _ := opbus.Get[string](ev.New, "config.name"); name == "" {
					return opbus.Blocked("set config item 'name'"), nil
				}
				return opbus.Active(""), nil
			}, opbus.On{Fields: []string{"config.name"}, Kinds: []string{juju.ObjectUnit}}),
			b.Handle("poll", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
				ev.Again(time.Minute)
				return opbus.Waiting("workload starting"), nil
			}, opbus.On{Fields: []string{"config"}, Kinds: []string{juju.ObjectUnit}}),
			b.Handle("upgrade", func(context.Context, *opbus.Event) (opbus.Status, error) {
				return opbus.Status{}, nil
			}, upgradeOn()),
			b.Handle("app", func(context.Context, *opbus.Event) (opbus.Status, error) {
				return opbus.Status{}, nil
			}, opbus.On{Kinds: []string{juju.ObjectApplication}, Fields: []string{"config"}}),
		)
	}
	charm := &jujutest.Harness{Setup: setup, Options: &juju.Options{Endpoints: []string{}}}
	model := &jujutest.Model{Unit: "hello/0", Config: map[string]any{"name": ""}}
	var err error
	for _, hook := range []string{"install", "config-changed"} {
		if model, err = charm.Run(context.Background(), hook, model); err != nil {
			t.Fatalf("%s: %v", hook, err)
		}
	}
	var out bytes.Buffer
	err = juju.Explain(context.Background(), &out, setup, &juju.Options{
		Getenv: func(k string) string { return map[string]string{"JUJU_UNIT_NAME": "hello/0"}[k] },
		Runner: jujutest.NewRunner(model),
	})
	if err != nil {
		t.Fatal(err)
	}
	unit, app, _ := strings.Cut(out.String(), "\n\n")
	for _, want := range []string{
		"unit hello/0 (from the record, at ",
		"status: blocked \"set config item 'name'\"\n",
		"config: ran\n",
		"poll: scheduled\n",
		"upgrade: never-ran\n", // When passed it over: nothing recorded
		"app: filtered-by-kind\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit: lacks %q:\n%s", want, unit)
		}
	}
	for _, want := range []string{"application hello (from the record", "note: no record: nothing has been committed for it", "poll: filtered-by-kind\n", "config: filtered-by-kind\n", "app: never-ran\n"} {
		if !strings.Contains(app, want) {
			t.Errorf("application: lacks %q:\n%s", want, app)
		}
	}
	if err := juju.Explain(context.Background(), &out, setup, &juju.Options{Getenv: func(string) string { return "" }, Runner: jujutest.NewRunner(model)}); err == nil || !strings.Contains(err.Error(), "juju exec --unit app/0 -- ./dispatch explain") {
		t.Errorf("without JUJU_UNIT_NAME: got %v, want an error saying how to run it", err)
	}
}

// TestExplainProcess runs a charm as a process for its install hook, then
// as ./dispatch explain runs under juju exec (JUJU_UNIT_NAME set, hook
// tools on the PATH, no JUJU_DISPATCH_PATH): Main explains instead of
// running a hook, and writes nothing.
func TestExplainProcess(t *testing.T) {
	u := newCharmUnit(t, nil)
	if code, stderr := u.install(t, u.dir, u.dir, "config"); code != 0 {
		t.Fatalf("install: exit %d: %s", code, stderr)
	}
	if err := jujutest.CommitFile(u.model); err != nil {
		t.Fatal(err)
	}
	before, err := jujutest.ReadModel(u.model)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(u.dir, "bin", "opbus-charm"), juju.ExplainArg)
	cmd.Dir = u.dir
	cmd.Env = []string{"PATH=" + u.tools, jujutest.ModelEnv + "=" + u.model, "JUJU_UNIT_NAME=web/0", "OPBUS_TEST_FIELDS=config", "GORACE=atexit_sleep_ms=0"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("./dispatch explain: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"unit web/0 (from the record", "h: ran\n", "application web (from the record"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	after, err := jujutest.ReadModel(u.model)
	if err != nil {
		t.Fatal(err)
	}
	if after.Staged != nil || len(after.State) != len(before.State) || after.UnitStatus != before.UnitStatus {
		t.Errorf("explain changed the model: staged %+v", after.Staged)
	}
}

// upgradeOn is a unit handler of upgrade-charm.
func upgradeOn() opbus.On {
	on := juju.OnHook("upgrade-charm")
	on.Kinds = []string{juju.ObjectUnit}
	return on
}
