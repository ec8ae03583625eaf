package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

// TestPebbleThatStopsAnswering runs the charm as Juju runs it against a
// workload container whose Pebble stops answering in the middle of a
// hook: the hook fails once OPBUS_PEBBLE_TIMEOUT (1s here; 30s by
// default) has passed, naming the container, the socket and the call,
// rather than blocking the unit's every later hook; and Juju's retry of
// the hook, once Pebble answers, makes the app run with the new port.
func TestPebbleThatStopsAnswering(t *testing.T) {
	w := charmproc.NewContainer(t, container)
	w.Up()
	u := jujutest.DeployCharm(t, jujutest.BuildCharm(t, ""), installed(), unitEnv,
		&jujutest.DeployOptions{Files: metadataFiles, Dispatch: "dispatch", BinName: "sidecar"})
	u.Extra = []string{juju.PebbleDirEnv + "=" + w.Dir, juju.PebbleTimeoutEnv + "=1s"}
	// hook runs a hook, killed if it has not ended after a minute.
	hook := func(name string, change func(*jujutest.Model)) jujutest.HookResult {
		t.Helper()
		u.Prepare(change)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := u.Command(hookEnv(name))
		cmd := exec.CommandContext(ctx, c.Path)
		cmd.Dir, cmd.Env, cmd.WaitDelay = c.Dir, c.Env, time.Second
		r := u.Run(cmd)
		if ctx.Err() != nil {
			t.Fatalf("%s: the hook did not end within a minute", name)
		}
		return r
	}
	if r := hook("workload-pebble-ready", nil); r.Exit != 0 {
		t.Fatalf("workload-pebble-ready: exit %d: %s", r.Exit, r.Stderr)
	}
	w.CheckServing(t, configFile, service, 8080, 1)

	w.Pebble.StopAnswering("POST /v1/layers")
	r := hook("config-changed", func(m *jujutest.Model) { m.Config["port"] = 9090.0 })
	w.Pebble.Answer()
	want := `container "workload" (socket ` + w.Pebble.Socket + `): add layer "app": pebble did not answer within 1s`
	if r.Exit == 0 || !strings.Contains(r.Stderr, want) {
		t.Errorf("config-changed while Pebble does not answer: exit %d, stderr:\n%s\nwant a failure with %s", r.Exit, r.Stderr, want)
	}
	if r := hook("config-changed", nil); r.Exit != 0 || r.Model.UnitStatus.Status != "blocked" {
		t.Fatalf("config-changed again: exit %d, status %+v: %s", r.Exit, r.Model.UnitStatus, r.Stderr)
	}
	w.CheckServing(t, configFile, service, 9090, 2)
}
