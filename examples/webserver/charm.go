package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
)

// The server's files and its Pebble names.
const (
	container  = "workload"
	configFile = "/etc/webserver/config.json"
	serverBin  = "/usr/bin/webserver"
	service    = "webserver"
	check      = "alive"
)

// config is the charm's configuration, as charmcraft.yaml declares it.
type config struct {
	Port     int
	Greeting string
}

// workload configures the server and has Pebble run it.
func workload(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	doc, err := juju.DocumentOf(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	if !doc.Containers[container].CanConnect {
		return opbus.Waiting("Waiting for Pebble in the workload container"), nil
	}
	cfg, err := juju.LoadConfig[config](ctx, ev)
	if err != nil || cfg.Port < 1 || cfg.Port > 65535 {
		return opbus.Blocked(fmt.Sprintf("Config item 'port' must be a port number, not %v", doc.Config["port"])), nil
	}
	port, greeting := cfg.Port, cfg.Greeting
	hook := juju.FromContext(ctx)
	c := hook.Container(container)

	conf, _ := json.Marshal(map[string]any{"port": port, "greeting": greeting})
	sum := sha256.Sum256(conf)
	if err := c.Push(ctx, configFile, conf, &juju.PushOptions{MakeDirs: true, Permissions: 0o644}); err != nil {
		return opbus.Status{}, err
	}
	layer := &juju.Layer{
		Summary: "web server",
		Services: map[string]*juju.Service{service: {
			Override: "replace",
			Command:  serverBin + " --config " + configFile,
			Startup:  "enabled",
			// The configuration's digest makes the definition change with
			// the file, so that a replan restarts the server for it.
			Environment: map[string]string{"CONFIG_SHA256": hex.EncodeToString(sum[:])},
		}},
		Checks: map[string]*juju.Check{check: {
			Override: "replace",
			Level:    "alive",
			HTTP:     &juju.HTTPCheck{URL: "http://localhost:" + strconv.Itoa(port) + "/"},
		}},
	}
	// Only a plan whose service differs from the layer's needs the layer
	// and a replan (as ops charms compare get_plan()'s services).
	plan, err := c.Plan(ctx)
	if err != nil {
		return opbus.Status{}, err
	}
	if !reflect.DeepEqual(plan.Services[service], layer.Services[service]) {
		if err := c.AddLayer(ctx, service, layer, true); err != nil {
			return opbus.Status{}, err
		}
		// Replan starts the server, or restarts it if its definition
		// changed.
		if err := c.Replan(ctx); err != nil {
			return opbus.Status{}, err
		}
	}
	out, err := c.Exec(ctx, []string{serverBin, "--version"}, nil)
	if err != nil {
		return opbus.Status{}, err
	}
	if out.ExitCode != 0 {
		return opbus.Blocked(fmt.Sprintf("%s --version exited %d: %s", serverBin, out.ExitCode, strings.TrimSpace(string(out.Stderr)))), nil
	}
	if err := hook.Tools.ApplicationVersionSet(ctx, strings.TrimSpace(string(out.Stdout))); err != nil {
		return opbus.Status{}, err
	}
	return opbus.Active(""), nil
}

// health reports the server's check on the hooks Juju runs when it fails
// or recovers.
func health(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	doc, err := juju.DocumentOf(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	if doc.Hook.Workload != container || doc.Hook.CheckName != check {
		return opbus.Active(""), nil
	}
	checks, err := juju.FromContext(ctx).Container(container).Checks(ctx, check)
	if err != nil {
		return opbus.Status{}, err
	}
	if len(checks) == 1 && checks[0].Status == "down" {
		return opbus.Maintenance(fmt.Sprintf("Check %s is down after %d failures", check, checks[0].Failures)), nil
	}
	return opbus.Active(""), nil
}
