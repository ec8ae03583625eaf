package juju_test

import (
	"context"
	"fmt"
	"os"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// Container.Plan reads the plan the layers combine to, each service with
// its override.
func ExampleContainer_Plan() {
	dir, _ := os.MkdirTemp("", "pebble")
	defer os.RemoveAll(dir)
	p, _ := jujutest.ListenPebble(dir, "workload")
	defer p.Close()
	c := juju.NewContainer("workload", dir)
	ctx := context.Background()

	base := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "replace", Command: "/bin/app", KillDelay: "10s"}}}
	more := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "merge", Environment: map[string]string{"PORT": "8080"}}}}
	c.AddLayer(ctx, "base", base, false)
	c.AddLayer(ctx, "more", more, false)
	plan, err := c.Plan(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	app := plan.Services["app"]
	fmt.Println(app.Override, app.Command, app.KillDelay, app.Environment)
	// Output:
	// replace /bin/app 10s map[PORT:8080]
}
