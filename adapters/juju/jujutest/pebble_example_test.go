package jujutest_test

import (
	"context"
	"fmt"
	"os"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// A sidecar charm's handler, subscribed to its container, makes the
// container's layer; when the container restarts, its new Pebble has no
// layer, and the <container>-pebble-ready hook Juju then runs makes it
// again.
func ExamplePebble_Restart() {
	dir, _ := os.MkdirTemp("", "pebble")
	defer os.RemoveAll(dir)
	p, _ := jujutest.ListenPebble(dir, "workload")
	defer p.Close()

	layer := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "replace", Command: "/bin/app", Startup: "enabled"}}}
	h := &jujutest.Harness{PebbleDir: dir, Options: &juju.Options{Containers: []string{"workload"}}, Setup: func(b *opbus.Bus) error {
		return b.Handle("workload", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			d, err := juju.DocumentOf(ev)
			if err != nil || !d.Containers["workload"].CanConnect {
				return opbus.Waiting("waiting for Pebble"), err
			}
			c := juju.FromContext(ctx).Container("workload")
			if err := c.AddLayer(ctx, "app", layer, true); err != nil {
				return opbus.Status{}, err
			}
			return opbus.Active(""), c.Replan(ctx)
		}, opbus.On{Fields: []string{"containers.workload"}})
	}}
	ctx := context.Background()
	m, _ := h.Run(ctx, "workload-pebble-ready", &jujutest.Model{Unit: "web/0"})
	fmt.Println(p.Layers(), p.Services())

	p.Restart()
	fmt.Println(p.Layers(), p.Services())
	m, err := h.Run(ctx, "workload-pebble-ready", m)
	fmt.Println(p.Layers(), p.Services(), m.UnitStatus, err)
	// Output:
	// [app] [{app enabled active}]
	// [] []
	// [app] [{app enabled active}] {active } <nil>
}
