package juju_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// Each test here checks one way the adapter once differed from Juju (found
// by running charms adversarially and reading Juju's and ops' sources),
// and fails without its fix.

// TestActionRunsOnlyItsOwnHandlers: a config handler that fails in every
// hook puts the unit in error, but an action still runs (Juju runs actions
// while a unit is in hook error): only the handlers that subscribe to
// action run in it, and the failing one neither runs nor fails it.
func TestActionRunsOnlyItsOwnHandlers(t *testing.T) {
	configRuns := 0
	c := charm(
		handler{"config", func(context.Context, *opbus.Event) (opbus.Status, error) {
			configRuns++
			return opbus.Status{}, errors.New("bad config")
		}, opbus.On{Fields: []string{"config"}}},
		handler{"backup", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			return opbus.Status{}, juju.FromContext(ctx).Tools.ActionSet(ctx, map[string]string{"done": "yes"})
		}, juju.OnAction("backup")},
	)
	m, err := c.Run(context.Background(), "config-changed", newModel())
	if err == nil || configRuns != 1 {
		t.Fatalf("config-changed: err %v after %d runs, want the config handler's error", err, configRuns)
	}
	if got := m.ShownStatus(); got != (jujutest.Status{Status: "error", Message: `hook failed: "config-changed"`}) {
		t.Errorf("after the failed hook juju status shows %v", got)
	}
	m.Action = &jujutest.Action{Name: "backup"}
	m, err = c.Run(context.Background(), "actions/backup", m)
	if err != nil {
		t.Fatalf("the action failed: %v", err)
	}
	if configRuns != 1 || m.Action.Results["done"] != "yes" {
		t.Errorf("config handler ran %d times (want 1: not in the action), results %v", configRuns, m.Action.Results)
	}
	if m.HookError == "" {
		t.Error("the action cleared the hook error: Juju keeps the unit in error until a hook succeeds")
	}
	// The failing handler is still pending: the retried hook runs it.
	if _, err := c.Run(context.Background(), "config-changed", m); err == nil || configRuns != 2 {
		t.Errorf("the retried hook: err %v, config runs %d, want the handler to run and fail again", err, configRuns)
	}
}

// TestFailedActionLogSaysNoRetry: Juju never runs a failed action again,
// so the log line of its failure must not say it will.
func TestFailedActionLogSaysNoRetry(t *testing.T) {
	c := charm(handler{"backup", func(context.Context, *opbus.Event) (opbus.Status, error) {
		return opbus.Status{}, errors.New("no space")
	}, juju.OnAction("backup")})
	m := newModel()
	m.Action = &jujutest.Action{Name: "backup"}
	out, err := c.Run(context.Background(), "actions/backup", m)
	if err == nil {
		t.Fatal("the failing action succeeded")
	}
	found := false
	for _, l := range out.Logs {
		if strings.Contains(l.Message, "retries") {
			t.Errorf("the log says Juju retries the action: %q", l.Message)
		}
		if l.Level == juju.LogError && strings.Contains(l.Message, "does not run it again") {
			found = true
		}
	}
	if !found || out.HookError != "" {
		t.Errorf("logs %q, hook error %q: want an ERROR line saying the action is not run again, and no hook error", out.Logs, out.HookError)
	}
}

// yamlRefused holds the characters that encoding/json leaves raw and
// Juju's YAML reader refuses (U+007F, C1 controls, U+FFFE, U+FFFF), and
// NEL, which YAML's double quotes would fold into a space.
const yamlRefused = "a\u007fb\u0080c\u0085d\u009fe\ufffef\uffffg"

// TestSettingsEscapeWhatYAMLRefuses: relation-set and state-set input
// that holds characters YAML refuses raw is written escaped, and reaches
// the model unchanged; written raw, Juju fails the hook forever.
func TestSettingsEscapeWhatYAMLRefuses(t *testing.T) {
	c := charm(handler{"h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		tools := juju.FromContext(ctx).Tools
		ev.SetValue("note", yamlRefused)
		return opbus.Active(""), errors.Join(
			tools.RelationSet(ctx, 3, map[string]string{"k" + yamlRefused: yamlRefused}),
			tools.StateSet(ctx, map[string]string{"extra": yamlRefused}),
		)
	}, opbus.On{Fields: []string{"config"}}})
	m := run(t, c, "install", newModel())
	if got := m.Relation(3).LocalUnitData["k"+yamlRefused]; got != yamlRefused {
		t.Errorf("relation data %q, want %q", m.Relation(3).LocalUnitData, yamlRefused)
	}
	if m.State["extra"] != yamlRefused || !strings.Contains(m.State[juju.DefaultStateKey], yamlRefused) {
		t.Errorf("state %q", m.State)
	}
}

// TestDeadRelationReadsAsEmpty: a relation that relation-ids lists but
// that Juju answers "relation not found" for (teardown, remove-relation
// --force) reads as a relation with no units and no data, as ops reads
// it, instead of failing every hook.
func TestDeadRelationReadsAsEmpty(t *testing.T) {
	var docs []map[string]any
	c := charm(handler{"db", capture(&docs), opbus.On{Fields: []string{"relations.db"}}})
	m := newModel()
	m.Relation(3).Dead = true
	run(t, c, "update-status", m)
	want := []any{map[string]any{"id": 3, "app": "", "units": map[string]any{}, "app-data": map[string]any{}}}
	if len(docs) != 1 || !reflect.DeepEqual(docs[0]["relations"].(map[string]any)["db"], want) {
		t.Errorf("document relations %v, want db: %v", docs, want)
	}
}

// TestBigIntegersStayExact: config values and action parameters above
// 2^53 reach handlers exactly, not rounded through float64.
func TestBigIntegersStayExact(t *testing.T) {
	const big = 9007199254740993 // 2^53 + 1
	var gotConfig, gotParam int64
	c := charm(
		handler{"config", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			v, err := opbus.Get[int64](ev.New, "config.big")
			gotConfig = v
			return opbus.Status{}, err
		}, opbus.On{Fields: []string{"config.big"}}},
		handler{"action", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			v, err := opbus.Get[int64](ev.New, "action.params.size")
			gotParam = v
			return opbus.Status{}, err
		}, juju.OnAction()},
	)
	m := newModel()
	m.Config["big"] = json.Number("9007199254740993")
	m = run(t, c, "config-changed", m)
	m.Action = &jujutest.Action{Name: "resize", Params: map[string]any{"size": json.Number("9007199254740993")}}
	run(t, c, "actions/resize", m)
	if gotConfig != big || gotParam != big {
		t.Errorf("config %d, param %d, want %d", gotConfig, gotParam, int64(big))
	}
}

// TestDocumentOfKeepsIntegers: DocumentOf hands config values and action
// parameters as the document holds them, integers as exact int64s (J9),
// not float64s.
func TestDocumentOfKeepsIntegers(t *testing.T) {
	var config, params map[string]any
	c := charm(handler{"h", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
		d, err := juju.DocumentOf(ev)
		if err == nil {
			config, params = d.Config, d.Action.Params
		}
		return opbus.Status{}, err
	}, func() opbus.On { on := juju.OnAction(); on.Fields = append(on.Fields, "config"); return on }()})
	m := newModel()
	m.Config = map[string]any{"big": json.Number("9007199254740993"), "ratio": 0.5, "port": 8080.0}
	m.Action = &jujutest.Action{Name: "resize", Params: map[string]any{"size": json.Number("9007199254740993"), "nested": map[string]any{"n": 2.0}}}
	run(t, c, "actions/resize", m)
	if config["big"] != int64(9007199254740993) || config["port"] != int64(8080) || config["ratio"] != 0.5 {
		t.Errorf("config %#v", config)
	}
	if params["size"] != int64(9007199254740993) || params["nested"].(map[string]any)["n"] != int64(2) {
		t.Errorf("params %#v", params)
	}
}

// TestCollectMetricsRunsHandlers: collect-metrics runs in Juju's
// restricted context, where config-get, state-get, status and leadership
// are refused; its handlers still run and add metrics, the adapter calls
// no refused tool (a handler of hook.event and config sees no config) and
// the hook succeeds.
func TestCollectMetricsRunsHandlers(t *testing.T) {
	var docs []map[string]any
	c := charm(
		handler{"metrics", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			docs = append(docs, ev.New)
			return opbus.Status{}, juju.FromContext(ctx).Tools.AddMetric(ctx, map[string]float64{"users": 3}, nil)
		}, func() opbus.On {
			on := juju.OnHook("collect-metrics")
			on.Fields = append(on.Fields, "config", "leader")
			return on
		}()},
		handler{"status", returns(opbus.Active("")), opbus.On{Fields: []string{"relations.db"}}},
	)
	m := run(t, c, "collect-metrics", newModel())
	if m.Metrics["users"] != "3" {
		t.Errorf("metrics %v, calls %v", m.Metrics, toolNames(m))
	}
	for _, call := range m.Calls {
		if call.Exit != 0 {
			t.Errorf("call %v failed", call)
		}
	}
	if len(docs) != 1 || docs[0]["config"] != nil || docs[0]["leader"] != nil {
		t.Errorf("documents %v, want one without config or leader", docs)
	}
}

// TestMeterStatusChangedIsRestricted: meter-status-changed runs in Juju's
// restricted context too (only juju-log works there): its handlers run
// with the meter status in the document, no refused tool is called and
// the hook succeeds; the other handlers do not run.
func TestMeterStatusChangedIsRestricted(t *testing.T) {
	var docs []map[string]any
	others := 0
	c := charm(
		handler{"meter", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			docs = append(docs, ev.New)
			juju.FromContext(ctx).Logger.Info("meter status changed")
			return opbus.Blocked("meter is red"), nil
		}, func() opbus.On {
			on := juju.OnHook("meter-status-changed")
			on.Fields = append(on.Fields, "config")
			return on
		}()},
		handler{"config", func(context.Context, *opbus.Event) (opbus.Status, error) {
			others++
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"config", "leader", "relations"}}},
	)
	m := newModel()
	out, err := c.RunEnv(context.Background(), juju.Env{Name: "meter-status-changed", MeterStatus: "RED", MeterInfo: "over quota"}, m)
	if err != nil {
		t.Fatalf("meter-status-changed failed: %v; calls %v", err, out.Calls)
	}
	for _, call := range out.Calls {
		if call.Exit != 0 {
			t.Errorf("call %v failed", call)
		}
	}
	if others != 0 {
		t.Errorf("the config handler ran %d times in meter-status-changed", others)
	}
	if len(docs) != 1 {
		t.Fatalf("the meter handler ran %d times, want once", len(docs))
	}
	hook := docs[0]["hook"].(map[string]any)
	if hook["meter-status"] != "RED" || hook["meter-info"] != "over quota" || hook["kind"] != "meter-status-changed" || docs[0]["config"] != nil {
		t.Errorf("document %v", docs[0])
	}
	if out.CallCount("state-set")+out.CallCount("status-set") != 0 || len(out.Logs) == 0 {
		t.Errorf("calls %v, logs %v", toolNames(out), out.Logs)
	}
}

// TestStatusMessageCleaned: a status message with a NUL byte, invalid
// UTF-8 and surrounding space is set cleaned, not refused, and not set
// again on the next hook (status-get gives back what was set).
func TestStatusMessageCleaned(t *testing.T) {
	c := charm(handler{"h", returns(opbus.Active("  ready\x00 now \xff\n")), opbus.On{Fields: []string{"config"}}})
	m := run(t, c, "install", newModel())
	if want := (jujutest.Status{Status: "active", Message: "ready now \ufffd"}); m.UnitStatus != want {
		t.Errorf("status %q, want %q", m.UnitStatus, want)
	}
	m.Config["port"] = 1.0
	if m = run(t, c, "config-changed", m); m.CallCount("status-set") != 0 {
		t.Errorf("the same status was set again: calls %v", toolNames(m))
	}
}

// TestUpgradeCharmRunsEveryHandlerAgain: after upgrade-charm every handler
// runs again once, whether or not its fields changed, and the status of a
// handler the new code no longer has leaves the unit.
func TestUpgradeCharmRunsEveryHandlerAgain(t *testing.T) {
	runs := map[string]int{}
	count := func(st opbus.Status) opbus.HandlerFunc {
		return func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			runs[ev.Handler]++
			return st, nil
		}
	}
	old := charm(
		handler{"config", count(opbus.Active("")), opbus.On{Fields: []string{"config"}}},
		handler{"legacy", count(opbus.Blocked("old code")), opbus.On{Fields: []string{"leader"}}},
	)
	m := run(t, old, "install", newModel())
	if m.UnitStatus.Status != "blocked" {
		t.Fatalf("status %v", m.UnitStatus)
	}
	upgraded := charm(handler{"config", count(opbus.Active("v2")), opbus.On{Fields: []string{"config"}}})
	m = run(t, upgraded, "upgrade-charm", m)
	if runs["config"] != 2 {
		t.Errorf("config ran %d times, want 2 (again after the upgrade)", runs["config"])
	}
	if want := (jujutest.Status{Status: "active", Message: "v2"}); m.UnitStatus != want {
		t.Errorf("status after upgrade %v, want %v (the removed handler's gone)", m.UnitStatus, want)
	}
	run(t, upgraded, "config-changed", m)
	if runs["config"] != 2 {
		t.Errorf("config ran %d times, want once only after the upgrade", runs["config"])
	}
}

// TestUpgradeCharmStatusFromWhatRemains: when upgrade-charm removes the
// handler whose slot was the unit's only status, the unit does not keep
// showing its message: it is set from the slots that remain, active with
// no message when none does; and nothing of the removed handler (digest,
// slot, kept value, timer) stays in the stored records.
func TestUpgradeCharmStatusFromWhatRemains(t *testing.T) {
	old := charm(
		handler{"config", returns(opbus.Status{}), opbus.On{Fields: []string{"config"}}},
		handler{"legacy", returns(opbus.Blocked("old code")), opbus.On{Fields: []string{"config.port"}, KeepOld: true, Every: time.Hour}},
	)
	m := run(t, old, "install", newModel())
	if m.UnitStatus != (jujutest.Status{Status: "blocked", Message: "old code"}) || !strings.Contains(m.State[juju.DefaultStateKey], `"legacy"`) {
		t.Fatalf("after install: status %v, records %s", m.UnitStatus, m.State[juju.DefaultStateKey])
	}
	upgraded := charm(handler{"config", returns(opbus.Status{}), opbus.On{Fields: []string{"config"}}})
	m = run(t, upgraded, "upgrade-charm", m)
	if want := (jujutest.Status{Status: "active"}); m.UnitStatus != want {
		t.Errorf("status after the upgrade %v, want %v: no slot holds the removed handler's message", m.UnitStatus, want)
	}
	if rec := m.State[juju.DefaultStateKey]; strings.Contains(rec, "legacy") {
		t.Errorf("the removed handler stays in the records: %s", rec)
	}
	// With another slot left, the status is that slot's.
	old = charm(
		handler{"config", returns(opbus.Waiting("starting")), opbus.On{Fields: []string{"config"}}},
		handler{"legacy", returns(opbus.Blocked("old code")), opbus.On{Fields: []string{"leader"}}},
	)
	m = run(t, old, "install", newModel())
	upgraded = charm(handler{"config", returns(opbus.Waiting("starting")), opbus.On{Fields: []string{"config"}}})
	if m = run(t, upgraded, "upgrade-charm", m); m.UnitStatus != (jujutest.Status{Status: "waiting", Message: "starting"}) {
		t.Errorf("status after the upgrade %v, want the remaining slot's", m.UnitStatus)
	}
}

// TestUpgradeCharmLeavesNothingOfARemovedHandler: when no handler of the
// new code runs at upgrade-charm (the records are written as the upgrade
// edited them), nothing of a removed handler stays in them: its timer
// went with its digest, slot and kept value.
func TestUpgradeCharmLeavesNothingOfARemovedHandler(t *testing.T) {
	old := charm(
		handler{"install", returns(opbus.Status{}), juju.OnHook("install")},
		handler{"legacy", returns(opbus.Active("")), opbus.On{Fields: []string{"config.port"}, KeepOld: true, Every: time.Hour}},
	)
	m := run(t, old, "install", newModel())
	if rec := m.State[juju.DefaultStateKey]; !strings.Contains(rec, `"timers":{"legacy"`) {
		t.Fatalf("after install the records hold no timer of legacy: %s", rec)
	}
	upgraded := charm(handler{"install", returns(opbus.Status{}), juju.OnHook("install")})
	m = run(t, upgraded, "upgrade-charm", m)
	if rec := m.State[juju.DefaultStateKey]; strings.Contains(rec, "legacy") {
		t.Errorf("the removed handler stays in the records: %s", rec)
	}
}

// TestUpgradeCharmAppStatusFromWhatRemains: when upgrade-charm removes the
// last application handler, whose slot held the application's status,
// the leader sets the application's status from what remains (active
// with no message), not leaving the removed handler's.
func TestUpgradeCharmAppStatusFromWhatRemains(t *testing.T) {
	unit := handler{"config", returns(opbus.Active("")), opbus.On{Kinds: []string{juju.ObjectUnit}, Fields: []string{"config"}}}
	old := charm(unit, handler{"app-legacy", returns(opbus.Blocked("old app")), opbus.On{Kinds: []string{juju.ObjectApplication}, Fields: []string{"config"}}})
	m := run(t, old, "install", newModel())
	if m.AppStatus != (jujutest.Status{Status: "blocked", Message: "old app"}) {
		t.Fatalf("application status after install %v", m.AppStatus)
	}
	m = run(t, charm(unit), "upgrade-charm", m)
	if want := (jujutest.Status{Status: "active"}); m.AppStatus != want {
		t.Errorf("application status after the upgrade %v, want %v", m.AppStatus, want)
	}
}

// TestMeterStatusSubscribers: in meter-status-changed the handlers that
// subscribe to hook.meter-status (or hook.meter-info), which only that
// hook carries, run as those of hook.event do; before, they were left
// out of the restricted context's scope and never ran anywhere.
func TestMeterStatusSubscribers(t *testing.T) {
	var seen []any
	c := charm(handler{"meter", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		seen = append(seen, ev.New["hook"].(map[string]any)["meter-status"])
		return opbus.Status{}, nil
	}, opbus.On{Fields: []string{"hook.meter-status"}}})
	out, err := c.RunEnv(context.Background(), juju.Env{Name: "meter-status-changed", MeterStatus: "AMBER"}, newModel())
	if err != nil || len(seen) != 1 || seen[0] != "AMBER" || len(out.Calls) != 0 {
		t.Fatalf("meter-status-changed: %v, seen %v, calls %v", err, seen, out.Calls)
	}
	if _, err := c.RunEnv(context.Background(), juju.Env{Name: "collect-metrics"}, newModel()); err != nil || len(seen) != 1 {
		t.Errorf("collect-metrics: %v, seen %v (the handler has nothing to see there)", err, seen)
	}
}
