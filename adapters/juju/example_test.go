package juju_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// setup registers the handlers of a charm that greets whoever its config
// names, and waits for leadership in a separate slot.
func setup(b *opbus.Bus) error {
	if err := b.Handle("greeting", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		name, err := opbus.Get[string](ev.New, "config.name")
		if err != nil && !errors.Is(err, opbus.ErrAbsent) {
			return opbus.Status{}, err
		}
		if name == "" {
			return opbus.Blocked("set config item 'name'"), nil
		}
		return opbus.Active("Hello, " + name), nil
	}, opbus.On{Fields: []string{"config.name"}}); err != nil {
		return err
	}
	return b.Handle("leadership", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		leader, err := opbus.Get[bool](ev.New, "leader")
		if err != nil {
			return opbus.Status{}, err
		}
		if leader {
			return opbus.Active(""), nil
		}
		return opbus.Waiting("waiting for leadership"), nil
	}, opbus.On{Fields: []string{"leader"}})
}

func ExampleRun() {
	// What Juju shows the unit, and the hook environment it sets.
	model := &jujutest.Model{Unit: "hello/0", Config: map[string]any{"name": ""}}
	env := map[string]string{"JUJU_DISPATCH_PATH": "hooks/install", "JUJU_UNIT_NAME": "hello/0"}
	opts := &juju.Options{
		Getenv: func(k string) string { return env[k] },
		Runner: jujutest.NewRunner(model), // the hook tools
	}
	for _, hook := range []string{"install", "config-changed", "leader-elected", "update-status"} {
		env["JUJU_DISPATCH_PATH"] = "hooks/" + hook
		switch hook {
		case "config-changed":
			model.Config["name"] = "world"
		case "leader-elected":
			model.Leader = true
		}
		model.Calls = nil
		if err := juju.Run(context.Background(), setup, opts); err != nil {
			model.Discard() // Juju drops a failed hook's state-set
			fmt.Println(err)
			continue
		}
		model.Commit() // and applies a successful one's
		fmt.Printf("%-15s %-8s %-30q state-set:%d status-set:%d\n", hook, model.UnitStatus.Status, model.UnitStatus.Message,
			model.CallCount("state-set"), model.CallCount("status-set"))
	}
	// Output:
	// install         blocked  "set config item 'name'"       state-set:1 status-set:1
	// config-changed  waiting  "waiting for leadership"       state-set:1 status-set:1
	// leader-elected  active   "Hello, world"                 state-set:1 status-set:1
	// update-status   active   "Hello, world"                 state-set:0 status-set:0
}

func ExampleMain() {
	// Main reads the process's environment unless Options say otherwise;
	// this example gives it a model and its environment in place of
	// Juju's. On failure Main would exit with status 1.
	model := &jujutest.Model{Unit: "hello/0", Leader: true, Config: map[string]any{"name": "world"}}
	env := map[string]string{"JUJU_DISPATCH_PATH": "hooks/install", "JUJU_UNIT_NAME": "hello/0"}
	juju.Main(setup, &juju.Options{
		Getenv: func(k string) string { return env[k] },
		Runner: jujutest.NewRunner(model),
	})
	fmt.Println(model.UnitStatus.Status, model.UnitStatus.Message)
	// Output:
	// active Hello, world
}

func ExampleOnHook() {
	c := &jujutest.Harness{Setup: func(b *opbus.Bus) error {
		on := juju.OnHook("install", "upgrade-charm")
		on.Fields = append(on.Fields, "config.version") // what the handler reads
		return b.Handle("install", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			d, err := juju.DocumentOf(ev)
			if err != nil {
				return opbus.Status{}, err
			}
			version, err := opbus.Get[string](ev.New, "config.version")
			if err != nil {
				return opbus.Status{}, err
			}
			fmt.Println("installing", version, "on", d.Hook.Name)
			return opbus.Status{}, juju.FromContext(ctx).Tools.ApplicationVersionSet(ctx, version)
		}, on)
	}}
	model := &jujutest.Model{Unit: "app/0", Config: map[string]any{"version": "1.0"}}
	for _, hook := range []string{"install", "config-changed", "upgrade-charm", "upgrade-charm"} {
		var err error
		if model, err = c.Run(context.Background(), hook, model); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("workload version:", model.WorkloadVersion)
	// Output:
	// installing 1.0 on install
	// installing 1.0 on upgrade-charm
	// installing 1.0 on upgrade-charm
	// workload version: 1.0
}
