package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

// BenchmarkHook measures a whole hook of the charm as Juju runs it: a new
// process of the dispatch script (sh, then the Go binary; "binary" runs
// the Go binary directly), which calls the fake hook tools as processes.
// After each hook, with the timer stopped, it replays the hook's tool calls
// as the same processes with the same arguments, so that tools-ms/op is
// what the tools alone cost and overhead-ms/op (hook − tools) is what the
// charm and adapter add: process start-up, reading the environment,
// building and dispatching the document, the handlers, encoding the
// record. The -cpu-ms/op metrics are the same in CPU time (user + system,
// the hook's process tree included), which other load on the machine
// does not inflate. calls/op counts the tool calls per hook.
//
//   - update-status: nothing changed since the last hook; no handler runs
//     (the steady state of a unit, every five minutes by default).
//   - config-changed: the config item kind changes from ingress to egress;
//     the config and istio-pilot handlers run, the manifest is rendered
//     and the record stored; the status stays active.
//   - start-up: the same processes without a hook environment, so the
//     binary exits as soon as it has read it: the cost of starting sh and
//     the Go program, which is part of the overhead.
func BenchmarkHook(b *testing.B) {
	for _, bc := range []struct {
		name, hook string
		binary     bool
		change     func(i int, m *jujutest.Model)
	}{
		{"start-up", "", false, nil},
		{"start-up/binary", "", true, nil},
		{"update-status", "update-status", false, nil},
		{"update-status/binary", "update-status", true, nil},
		{"config-changed", "config-changed", false, func(i int, m *jujutest.Model) {
			m.Config["kind"] = "egress"
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			start := installed()
			setKind("ingress")(start)
			joinPilot(start)
			pilotSends(start)
			u := deploy(b, start)
			if r := u.Hook(hookEnv("install"), nil); r.Exit != 0 || r.Model.UnitStatus.Status != "active" {
				b.Fatalf("install: exit %d, status %v: %s", r.Exit, r.Model.UnitStatus, r.Stderr)
			}
			settled, err := jujutest.ReadModel(u.Model)
			if err != nil {
				b.Fatal(err)
			}
			e := hookEnv(bc.hook)
			var hookTime, toolTime, hookCPU, toolCPU time.Duration
			count := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m := *settled
				m.Calls = nil
				m.Config = map[string]any{"kind": settled.Config["kind"]}
				if bc.change != nil {
					bc.change(i, &m)
				}
				if err := jujutest.WriteModel(u.Model, &m); err != nil {
					b.Fatal(err)
				}
				cmd := u.Command(e)
				if bc.binary {
					cmd.Path = filepath.Join(u.Dir, "bin", "istio-gateway")
				}
				if bc.hook == "" {
					cmd.Env = cmd.Env[:1] // PATH only
				}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				b.StartTimer()

				t0 := time.Now()
				err := cmd.Run()
				hookTime += time.Since(t0)
				if cmd.ProcessState != nil {
					hookCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				}

				b.StopTimer()
				if bc.hook == "" {
					if !strings.HasPrefix(stderr.String(), "juju: ") {
						b.Fatalf("start-up: %v: %s", err, stderr.String())
					}
					b.StartTimer()
					continue
				}
				if err != nil {
					b.Fatalf("%s: %v: %s", bc.hook, err, stderr.String())
				}
				after, err := jujutest.ReadModel(u.Model)
				if err != nil {
					b.Fatal(err)
				}
				if n := after.CallCount("status-set"); n != 0 || after.CallCount("state-get") != 1 {
					b.Fatalf("%s: calls %s", bc.hook, charmproc.Calls(after))
				}
				count += len(after.Calls)
				wall, cpu := replay(b, u, after.Calls)
				toolTime += wall
				toolCPU += cpu
				b.StartTimer()
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(count)/n, "calls/op")
			b.ReportMetric(hookTime.Seconds()*1e3/n, "hook-ms/op")
			b.ReportMetric(toolTime.Seconds()*1e3/n, "tools-ms/op")
			b.ReportMetric((hookTime-toolTime).Seconds()*1e3/n, "overhead-ms/op")
			b.ReportMetric(hookCPU.Seconds()*1e3/n, "hook-cpu-ms/op")
			b.ReportMetric(toolCPU.Seconds()*1e3/n, "tools-cpu-ms/op")
			b.ReportMetric((hookCPU-toolCPU).Seconds()*1e3/n, "overhead-cpu-ms/op")
		})
	}
}

// replay runs each call as a process of the fake tools, as the charm ran
// it, and returns the wall and CPU time they took. state-set and
// relation-set read their settings from standard input; the replay gives
// them an empty map.
func replay(b *testing.B, u *charmproc.Unit, calls []jujutest.Call) (wall, cpu time.Duration) {
	env := []string{"PATH=" + u.Tools, jujutest.ModelEnv + "=" + u.Model}
	for _, c := range calls {
		cmd := exec.Command(filepath.Join(u.Tools, c.Name), c.Args...)
		cmd.Env, cmd.Dir = env, u.Dir
		cmd.Stdin = strings.NewReader("{}\n")
		t0 := time.Now()
		err := cmd.Run()
		wall += time.Since(t0)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			b.Fatal(err)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return wall, cpu
}
