// Command charm is a small charm for jujutest's process-level tests: a
// config handler that reports the port, a backup action, a
// collect-metrics handler and a database relation that sets the workload
// version to the database server's.
package main

import (
	"context"
	"fmt"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/database"
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

func useDatabase(ctx context.Context, infos []database.Info) (opbus.Status, error) {
	switch {
	case len(infos) == 0:
		return opbus.Status{}, nil
	case !infos[0].Ready():
		return opbus.Waiting("Waiting for the database"), nil
	}
	return opbus.Status{}, juju.FromContext(ctx).Tools.ApplicationVersionSet(ctx, infos[0].Version)
}

func setup(b *opbus.Bus) error {
	db := database.Requires{Endpoint: "database", Database: "small"}
	if err := db.Register(b, "database", useDatabase); err != nil {
		return err
	}
	if err := b.Handle("config", configure, opbus.On{Fields: []string{"config"}}); err != nil {
		return err
	}
	if err := b.Handle("backup", runBackup, juju.OnAction("backup")); err != nil {
		return err
	}
	return b.Handle("metrics", collect, juju.OnHook("collect-metrics"))
}

func main() { juju.Main(setup, nil) }
