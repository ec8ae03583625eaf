package jujutest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// TestPebbleTimeout: every request to a Pebble that stops answering, and
// every wait for a change, fails after the container's Timeout with an
// error that names the container, the socket and the call and wraps
// juju.ErrPebbleTimeout and context.DeadlineExceeded; a cancelled context
// is not a timeout; the next call, once Pebble answers, succeeds.
func TestPebbleTimeout(t *testing.T) {
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	p.SetExec(func(*jujutest.Pebble, *jujutest.ExecRequest) (*juju.ExecResult, error) {
		return &juju.ExecResult{Stdout: []byte("ok")}, nil
	})
	c := juju.NewContainer("workload", dir)
	ctx := context.Background()
	layer := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "replace", Command: "app", Startup: "enabled"}}}
	p.WriteFile("/etc/app.conf", []byte("x"))
	calls := []struct {
		stall string // the requests that get no answer
		call  string // what the error names
		run   func() error
	}{
		{"GET /v1/system-info", "system-info", func() error { _, err := c.Info(ctx); return err }},
		{"POST /v1/files", "push /etc/app.conf", func() error { return c.Push(ctx, "/etc/app.conf", []byte("y"), nil) }},
		{"GET /v1/files", "pull /etc/app.conf", func() error { _, err := c.Pull(ctx, "/etc/app.conf"); return err }},
		{"POST /v1/layers", `add layer "app"`, func() error { return c.AddLayer(ctx, "app", layer, true) }},
		{"POST /v1/services", "replan", func() error { return c.Replan(ctx) }},
		{"GET /v1/changes", "replan", func() error { return c.Replan(ctx) }},
		{"GET /v1/changes", "stop app", func() error { return c.Stop(ctx, "app") }},
		{"GET /v1/services", "services", func() error { _, err := c.Services(ctx); return err }},
		{"GET /v1/checks", "checks", func() error { _, err := c.Checks(ctx); return err }},
		{"POST /v1/notices", "notify example.com/x", func() error { _, err := c.Notify(ctx, "example.com/x", nil); return err }},
		{"POST /v1/exec", "exec app --version", func() error { _, err := c.Exec(ctx, []string{"app", "--version"}, nil); return err }},
		{"GET /v1/tasks", "exec app --version", func() error { _, err := c.Exec(ctx, []string{"app", "--version"}, nil); return err }},
		{"GET /v1/changes", "exec app --version", func() error { _, err := c.Exec(ctx, []string{"app", "--version"}, nil); return err }},
	}
	for _, tt := range calls {
		t.Run(tt.stall+" "+tt.call, func(t *testing.T) {
			p.StopAnswering(tt.stall)
			c.Timeout = 50 * time.Millisecond
			err := tt.run()
			c.Timeout = 0 // the default, for the call once Pebble answers
			p.Answer()
			want := `juju: container "workload" (socket ` + c.Socket + `): ` + tt.call + `: pebble did not answer within 50ms`
			if err == nil || err.Error() != want || !errors.Is(err, juju.ErrPebbleTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v\nwant %s, wrapping ErrPebbleTimeout and context.DeadlineExceeded", err, want)
			}
			if err := tt.run(); err != nil {
				t.Errorf("once Pebble answers again: %v", err)
			}
		})
	}
	p.StopAnswering()
	defer p.Answer()
	cctx, cancel := context.WithCancel(ctx)
	c.Timeout = time.Minute
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := c.Replan(cctx); !errors.Is(err, context.Canceled) || errors.Is(err, juju.ErrPebbleTimeout) || !strings.Contains(err.Error(), "replan") {
		t.Errorf("cancelled: got %v, want context.Canceled naming the call, not a timeout", err)
	}
	if bin := os.Getenv(PebbleBinEnv); bin != "" {
		t.Run("real pebble stopped", func(t *testing.T) { realPebbleTimeout(t, bin) })
	}
}

// realPebbleTimeout: a real pebble that stops answering (its process
// stopped, as in a frozen container) fails a call after the container's
// Timeout; once it runs again, calls succeed.
func realPebbleTimeout(t *testing.T, bin string) {
	c, proc := startRealPebbleProcess(t, bin)
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	c.Timeout = 200 * time.Millisecond
	err := c.Push(context.Background(), filepath.Join(t.TempDir(), "f"), []byte("x"), nil)
	proc.Signal(syscall.SIGCONT)
	if !errors.Is(err, juju.ErrPebbleTimeout) || !strings.Contains(err.Error(), "pebble did not answer within 200ms") {
		t.Errorf("stopped: got %v, want a timeout", err)
	}
	c.Timeout = 0
	if _, err := c.Info(context.Background()); err != nil {
		t.Errorf("running again: %v", err)
	}
}

// TestPebbleTimeoutDefault: a Container's zero Timeout means
// juju.DefaultPebbleTimeout, at most 30 s.
func TestPebbleTimeoutDefault(t *testing.T) {
	if juju.DefaultPebbleTimeout <= 0 || juju.DefaultPebbleTimeout > 30*time.Second {
		t.Errorf("DefaultPebbleTimeout is %v, want from 0 to 30s", juju.DefaultPebbleTimeout)
	}
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	p.StopAnswering()
	defer p.Answer()
	c := juju.NewContainer("workload", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Info(ctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, juju.ErrPebbleTimeout) {
		t.Errorf("the caller's deadline first: got %v, want the caller's context.DeadlineExceeded", err)
	}
}
