package juju

import (
	"context"

	"github.com/opbus/opbus"
)

// pebbleCharm is the charm of TestPebbleCharmAsProcesses, run by the test
// binary as opbus-pebble-charm: one handler, subscribed to the workload
// container and the config option motd, gives Pebble a layer whose
// service has motd in its environment, and replans.
func pebbleCharm(b *opbus.Bus) error {
	return b.Handle("workload", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		d, err := DocumentOf(ev)
		if err != nil || !d.Containers["workload"].CanConnect {
			return opbus.Waiting("Waiting for Pebble"), err
		}
		motd, _ := d.Config["motd"].(string)
		c := FromContext(ctx).Container("workload")
		layer := &Layer{Services: map[string]*Service{"app": {
			Override: "replace", Command: "/bin/app", Startup: "enabled", Environment: map[string]string{"MOTD": motd},
		}}}
		if err := c.AddLayer(ctx, "app", layer, true); err != nil {
			return opbus.Status{}, err
		}
		return opbus.Active(""), c.Replan(ctx)
	}, opbus.On{Fields: []string{"containers.workload", "config.motd"}})
}
