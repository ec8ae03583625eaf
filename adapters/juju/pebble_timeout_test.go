package juju_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// TestPebbleThatStopsAnsweringFailsTheHook: a handler whose Pebble stops
// answering fails the hook once Options.PebbleTimeout has passed, with
// an error naming the container, the socket and the call, and the next
// hook, once Pebble answers, succeeds.
func TestPebbleThatStopsAnsweringFailsTheHook(t *testing.T) {
	charmDir, pebbleDir, workload := containerCharm(t)
	layer := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "replace", Command: "app", Startup: "enabled"}}}
	c := charm(handler{"workload", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		w := juju.FromContext(ctx).Container("workload")
		if err := w.AddLayer(ctx, "app", layer, true); err != nil {
			return opbus.Status{}, err
		}
		return opbus.Active(""), w.Replan(ctx)
	}, juju.OnHook()})
	// 1 s, not less: the calls before the one that hangs must answer
	// within it on a loaded machine under -race (50 ms did not: "add
	// layer" timed out once).
	c.Options = &juju.Options{PebbleTimeout: time.Second}
	c.CharmDir, c.PebbleDir = charmDir, pebbleDir
	m := newModel()
	workload.StopAnswering("GET /v1/changes")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // were the bound missing
	defer cancel()
	out, err := c.Run(ctx, "workload-pebble-ready", m)
	workload.Answer()
	want := `container "workload" (socket ` + workload.Socket + `): replan: pebble did not answer within 1s`
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, juju.ErrPebbleTimeout) || out.HookError == "" {
		t.Fatalf("got %v (hook error %q), want the hook failed with %s", err, out.HookError, want)
	}
	c.Options = nil // the default bound, for the retry
	out, err = c.Run(context.Background(), "workload-pebble-ready", out)
	if err != nil || out.UnitStatus.Status != "active" || len(workload.Services()) != 1 || workload.Services()[0].Current != "active" {
		t.Errorf("the next hook: %v, status %+v, services %+v; want it active with app running", err, out.UnitStatus, workload.Services())
	}
}

// TestPebbleTimeoutFromTheEnvironment: OPBUS_PEBBLE_TIMEOUT sets the
// Timeout of Hook.Container's containers unless Options.PebbleTimeout
// does; a value that is not a positive duration fails the hook, naming
// the variable.
func TestPebbleTimeoutFromTheEnvironment(t *testing.T) {
	tests := []struct {
		env  string
		opt  time.Duration
		want time.Duration
		err  string
	}{
		{"", 0, 0, ""},
		{"7s", 0, 7 * time.Second, ""},
		{"7s", time.Second, time.Second, ""},
		{"7", 0, 0, `juju: OPBUS_PEBBLE_TIMEOUT is "7": expected a positive duration such as 10s`},
		{"-1s", 0, 0, `juju: OPBUS_PEBBLE_TIMEOUT is "-1s": expected a positive duration such as 10s`},
		{"", -time.Second, 0, `juju: Options.PebbleTimeout is -1s: expected a positive duration, or 0 for the default`},
	}
	for _, tt := range tests {
		t.Run(tt.env+"/"+tt.opt.String(), func(t *testing.T) {
			env := map[string]string{"JUJU_DISPATCH_PATH": "hooks/install", "JUJU_UNIT_NAME": "web/0", juju.PebbleTimeoutEnv: tt.env}
			var got time.Duration
			setup := func(b *opbus.Bus) error {
				return b.Handle("h", func(ctx context.Context, _ *opbus.Event) (opbus.Status, error) {
					got = juju.FromContext(ctx).Container("workload").Timeout
					return opbus.Status{}, nil
				}, juju.OnHook())
			}
			err := juju.Run(context.Background(), setup, &juju.Options{
				Getenv: func(k string) string { return env[k] }, Runner: jujutest.NewRunner(newModel()), Endpoints: []string{}, Containers: []string{},
				PebbleTimeout: tt.opt,
			})
			switch {
			case tt.err != "" && (err == nil || err.Error() != tt.err):
				t.Errorf("got %v, want %s", err, tt.err)
			case tt.err == "" && (err != nil || got != tt.want):
				t.Errorf("got Timeout %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
