package jujutest_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// TestFakePebblePlanKeepsOverrides: the fake's plan has what Pebble's
// has: each service and check with the override of the layer that first
// defined it or last replaced it (a merge keeps it), and no layer
// summary.
func TestFakePebblePlanKeepsOverrides(t *testing.T) {
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	c := juju.NewContainer("workload", dir)
	ctx := context.Background()
	layers := []*juju.Layer{
		{Summary: "base", Services: map[string]*juju.Service{
			"app": {Override: "replace", Command: "app"},
			"log": {Override: "merge", Command: "log"},
		}, Checks: map[string]*juju.Check{"up": {Override: "replace", TCP: &juju.TCPCheck{Port: 80}}}},
		{Summary: "more", Services: map[string]*juju.Service{
			"app": {Override: "merge", Environment: map[string]string{"A": "1"}},
			"log": {Override: "replace", Command: "log2"},
		}, Checks: map[string]*juju.Check{"up": {Override: "merge", Threshold: 5}}},
	}
	for i, l := range layers {
		if err := c.AddLayer(ctx, []string{"base", "more"}[i], l, false); err != nil {
			t.Fatal(err)
		}
	}
	want := &juju.Layer{
		Services: map[string]*juju.Service{
			"app": {Override: "replace", Command: "app", Environment: map[string]string{"A": "1"}},
			"log": {Override: "replace", Command: "log2"},
		},
		Checks: map[string]*juju.Check{"up": {Override: "replace", Threshold: 5, TCP: &juju.TCPCheck{Port: 80}}},
	}
	if got := p.Plan(); !reflect.DeepEqual(got, want) {
		t.Errorf("plan:\n got %+v\nwant %+v", got, want)
	}
}

// TestFakePebbleSeeding: a test gives the fake the image's layers
// (SeedLayer, in the plan again after a restart) and what the charm finds
// already there (AddLayer, StartServices, gone after a restart); a replan
// leaves a running service whose definition did not change alone.
func TestFakePebbleSeeding(t *testing.T) {
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	base := &juju.Layer{Services: map[string]*juju.Service{"log": {Override: "replace", Command: "log", Startup: "enabled"}}}
	app := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "replace", Command: "app"}}}
	if err := p.SeedLayer("base", base); err != nil {
		t.Fatal(err)
	}
	if err := p.AddLayer("app", app, false); err != nil {
		t.Fatal(err)
	}
	if err := p.StartServices("app", "log"); err != nil {
		t.Fatal(err)
	}
	c := juju.NewContainer("workload", dir)
	ctx := context.Background()
	svcs, err := c.Services(ctx)
	want := []juju.ServiceInfo{{Name: "app", Startup: "disabled", Current: "active"}, {Name: "log", Startup: "enabled", Current: "active"}}
	if err != nil || !reflect.DeepEqual(svcs, want) {
		t.Errorf("services: got %+v, %v; want %+v", svcs, err, want)
	}
	if err := c.Replan(ctx); err != nil || p.Starts("app") != 1 || p.Starts("log") != 1 {
		t.Errorf("replan: %v; starts app %d, log %d; want 1 each", err, p.Starts("app"), p.Starts("log"))
	}
	p.Restart()
	if got := p.Layers(); !reflect.DeepEqual(got, []string{"base"}) {
		t.Errorf("layers after a restart: got %q, want the seeded one", got)
	}
	svcs, err = c.Services(ctx)
	want = []juju.ServiceInfo{{Name: "log", Startup: "enabled", Current: "inactive"}}
	if err != nil || !reflect.DeepEqual(svcs, want) {
		t.Errorf("services after a restart: got %+v, %v; want %+v", svcs, err, want)
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{p.StartServices("nope"), `jujutest: pebble "workload": service "nope" does not exist`},
		{p.AddLayer("bad", &juju.Layer{Services: map[string]*juju.Service{"x": {Command: "x"}}}, false), `must define "override" for service "x"`},
		{p.AddLayer("base", base, false), `layer "base" already exists`},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("got %v, want an error containing %q", tt.err, tt.want)
		}
	}
}

// TestPebbleOddPaths: a file whose path holds a double quote or a
// backslash is pushed and pulled back whole.
func TestPebbleOddPaths(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, base := target.start(t)
			ctx := context.Background()
			for _, name := range []string{`say "hi".txt`, `back\slash`, `both\" "`} {
				path := base + "/" + name
				data := []byte("content of " + name)
				if err := c.Push(ctx, path, data, &juju.PushOptions{MakeDirs: true}); err != nil {
					t.Errorf("push %q: %v", path, err)
					continue
				}
				if got, err := c.Pull(ctx, path); err != nil || string(got) != string(data) {
					t.Errorf("pull %q: got %q, %v; want %q", path, got, err, data)
				}
			}
		})
	}
}
