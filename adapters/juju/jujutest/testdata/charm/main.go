// Command charm is a small charm for jujutest's process-level tests: a
// config handler that reports the port, a backup action and a
// collect-metrics handler.
package main

import (
	"context"
	"fmt"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
)

type config struct {
	Port int
	Name string
}

type backup struct {
	Target string
	Level  int
}

func configure(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	cfg, err := juju.LoadConfig[config](ctx, ev)
	if err != nil {
		return opbus.Blocked(err.Error()), nil
	}
	return opbus.Active(fmt.Sprintf("%s on port %d", cfg.Name, cfg.Port)), nil
}

func runBackup(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	p, err := juju.LoadParams[backup](ctx, ev)
	if err != nil {
		return opbus.Status{}, err
	}
	return opbus.Status{}, juju.FromContext(ctx).Tools.ActionSet(ctx, map[string]string{"target": p.Target, "level": fmt.Sprint(p.Level)})
}

func collect(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	return opbus.Status{}, juju.FromContext(ctx).Tools.AddMetric(ctx, map[string]float64{"users": 3}, nil)
}

func setup(b *opbus.Bus) error {
	if err := b.Handle("config", configure, opbus.On{Fields: []string{"config"}}); err != nil {
		return err
	}
	if err := b.Handle("backup", runBackup, juju.OnAction("backup")); err != nil {
		return err
	}
	return b.Handle("metrics", collect, juju.OnHook("collect-metrics"))
}

func main() { juju.Main(setup, nil) }
