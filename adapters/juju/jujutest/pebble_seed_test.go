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

// TestPebblePlan: Plan reads the plan Pebble sends as YAML: every field
// of a service, check and log target, each with its override, the layers
// combined as Pebble combines them.
func TestPebblePlan(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			if plan, err := c.Plan(ctx); err != nil || !reflect.DeepEqual(plan, &juju.Layer{}) {
				t.Errorf("empty plan: got %+v, %v", plan, err)
			}
			app := &juju.Service{
				Override: "replace", Summary: "the app", Description: "It serves.\nTwo lines.\n", Command: "/bin/app --port 8080 [ --debug ]",
				Startup: "enabled", Environment: map[string]string{"A": "1", "B": "true", "C": "a: b", "D": oddText}, User: "root", Group: "root",
				WorkingDir: "/srv", Requires: []string{"db"}, After: []string{"db"}, Before: []string{"web"},
				OnSuccess: "ignore", OnFailure: "restart", OnCheckFailure: map[string]string{"up": "restart"},
				BackoffDelay: "500ms", BackoffFactor: 1.5, BackoffLimit: "1m0s", KillDelay: "10s",
			}
			layer := &juju.Layer{
				Summary:  "base",
				Services: map[string]*juju.Service{"app": app, "db": {Override: "replace", Command: "/bin/db"}, "web": {Override: "replace", Command: "/bin/web"}},
				Checks: map[string]*juju.Check{
					"up":   {Override: "replace", Level: "alive", Period: "10s", Timeout: "3s", Threshold: 5, HTTP: &juju.HTTPCheck{URL: "http://localhost:8080/", Headers: map[string]string{"X-A": "b"}}},
					"tcp":  {Override: "replace", TCP: &juju.TCPCheck{Port: 5432, Host: "localhost"}},
					"exec": {Override: "replace", Exec: &juju.ExecCheck{Command: "/bin/check", ServiceContext: "app", Environment: map[string]string{"K": "V"}, WorkingDir: "/tmp"}},
				},
				LogTargets: map[string]*juju.LogTarget{"loki": {Override: "replace", Type: "loki", Location: "http://loki:3100/loki/api/v1/push", Services: []string{"all"}, Labels: map[string]string{"app": "web"}}},
			}
			if err := c.AddLayer(ctx, "base", layer, false); err != nil {
				t.Fatal(err)
			}
			more := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "merge", Environment: map[string]string{"E": "5"}, After: []string{"cache"}}}}
			if err := c.AddLayer(ctx, "more", more, false); err != nil {
				t.Fatal(err)
			}
			plan, err := c.Plan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := *app
			want.Environment = map[string]string{"A": "1", "B": "true", "C": "a: b", "D": oddText, "E": "5"}
			want.After = []string{"db", "cache"}
			if got := plan.Services["app"]; !reflect.DeepEqual(got, &want) {
				t.Errorf("service app:\n got %+v\nwant %+v", got, &want)
			}
			for name, ch := range layer.Checks {
				got := plan.Checks[name]
				if ch.Threshold == 0 {
					c := *ch
					c.Threshold = 3 // Pebble's default, which its plan shows
					ch = &c
				}
				if !reflect.DeepEqual(got, ch) {
					t.Errorf("check %s: got %+v, want %+v", name, got, ch)
				}
			}
			if got := plan.LogTargets["loki"]; !reflect.DeepEqual(got, layer.LogTargets["loki"]) {
				t.Errorf("log target: got %+v, want %+v", got, layer.LogTargets["loki"])
			}
			if plan.Summary != "" || len(plan.Services) != 3 {
				t.Errorf("plan: summary %q, %d services; want none and 3", plan.Summary, len(plan.Services))
			}
		})
	}
}
