package jujutest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
)

func TestRunner(t *testing.T) {
	m := newModel()
	r := NewRunner(m)
	ctx := context.Background()

	out, err := r.Run(ctx, "is-leader", []string{"--format=json"}, nil)
	if err != nil || string(out) != "true\n" {
		t.Errorf("is-leader: got %q, %v", out, err)
	}

	args := []string{"bogus", "msg"}
	_, err = r.Run(ctx, "status-set", args, nil)
	var te *juju.ToolError
	if !errors.As(err, &te) || te.Tool != "status-set" || te.ExitCode != 2 || te.Stderr == "" {
		t.Errorf("status-set bogus: got %#v", err)
	}
	args[0] = "changed"
	if te.Args[0] != "bogus" || m.Calls[1].Args[0] != "bogus" {
		t.Error("the runner kept the caller's args slice")
	}

	if _, err := r.Run(ctx, "leader-set", nil, nil); !errors.Is(err, juju.ErrToolNotFound) {
		t.Errorf("unknown tool: got %v, want ErrToolNotFound", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Run(cancelled, "is-leader", nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
	if len(m.Calls) != 2 {
		t.Errorf("got %d calls recorded, want 2 (unknown and cancelled calls do not run)", len(m.Calls))
	}
}

func TestRunnerConcurrent(t *testing.T) {
	m := &Model{Unit: "a/0"}
	r := NewRunner(m)
	tools := juju.Tools{Runner: r}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if err := tools.JujuLog(context.Background(), juju.LogInfo, fmt.Sprint(i)); err != nil {
				t.Error(err)
			}
			r.Do(func(m *Model) { _ = len(m.Logs) })
		})
	}
	wg.Wait()
	if len(m.Logs) != 16 {
		t.Errorf("got %d logs, want 16", len(m.Logs))
	}
}
