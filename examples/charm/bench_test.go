package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

// BenchmarkHook measures a whole hook of the charm as Juju runs it: a new
// process of dispatch, which is the charm's Go binary, which calls the
// fake hook tools as processes. After each hook, with the timer stopped,
// it replays the hook's tool calls as the same processes with the same
// arguments, so that tools-ms/op is what the tools alone cost and
// overhead-ms/op (hook − tools) is what the charm and adapter add: process
// start-up, reading the environment, building and dispatching the
// document, the handlers, encoding the record. The -cpu-ms/op metrics are
// the same in CPU time (user + system, the hook's process tree included),
// which other load on the machine does not inflate. calls/op counts the
// tool calls per hook.
//
//   - update-status: nothing changed since the last hook; no handler runs
//     (the steady state of a unit, every five minutes by default).
//   - config-changed: the config item kind changes from ingress to egress;
//     the config and istio-pilot handlers run, the manifest is rendered
//     and the record stored; the status stays active.
//   - start-up: the same process without a hook environment, so the
//     binary exits as soon as it has read it: the cost of starting the Go
//     program, which is part of the overhead.
//
// The routes the charm took before, measured in the same run for
// comparison: "sh" runs the shell script that was dispatch, which execs
// the same binary from bin/; "former" is what this benchmark ran before,
// that script and a binary built by a plain go build, which links the C
// library dynamically for the net package (the packed binary is static).
func BenchmarkHook(b *testing.B) {
	for _, bc := range []struct {
		name, hook string
		route      string // "" (dispatch is the binary), "sh" or "former"
		change     func(i int, m *jujutest.Model)
	}{
		{"start-up", "", "", nil},
		{"start-up/sh", "", "sh", nil},
		{"start-up/former", "", "former", nil},
		{"update-status", "update-status", "", nil},
		{"update-status/sh", "update-status", "sh", nil},
		{"update-status/former", "update-status", "former", nil},
		{"config-changed", "config-changed", "", func(i int, m *jujutest.Model) {
			m.Config["kind"] = "egress"
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			start := installed()
			setKind("ingress")(start)
			joinPilot(start)
			pilotSends(start)
			u := deploy(b, start)
			script := route(b, u, bc.route)
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
				if script != "" {
					cmd.Path = script
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
func replay(b *testing.B, u *jujutest.CharmUnit, calls []jujutest.Call) (wall, cpu time.Duration) {
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

// formerDispatch is the shell script that was the charm's dispatch before
// the binary was: kept to measure what it cost.
const formerDispatch = `#!/bin/sh
if [ -z "$JUJU_DISPATCH_PATH" ]; then
	dir=${0%/*}
	JUJU_DISPATCH_PATH=${dir##*/}/${0##*/}
	export JUJU_DISPATCH_PATH
fi
exec "${JUJU_CHARM_DIR:-${0%/*}}/bin/istio-gateway"
`

// dynamic is the charm's binary built as this package's tests built it
// before: a plain go build with cgo, so linked dynamically.
var dynamic struct {
	sync.Once
	dir, path string
	err       error
}

// route installs the former dispatch script and its binary in u's charm
// directory for route "sh" (the static binary) or "former" (the
// dynamically linked one) and returns the script's path; for route "" it
// returns "", and the unit's dispatch is the binary.
func route(b *testing.B, u *jujutest.CharmUnit, route string) string {
	b.Helper()
	var bin string
	switch route {
	case "":
		return ""
	case "sh":
		bin = charmproc.Build(b, "istio-gateway")
	case "former":
		dynamic.Do(func() {
			if dynamic.dir, dynamic.err = os.MkdirTemp("", "istio-gateway-cgo-"); dynamic.err != nil {
				return
			}
			dynamic.path = filepath.Join(dynamic.dir, "istio-gateway")
			cmd := exec.Command("go", "build", "-o", dynamic.path, ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				dynamic.err = fmt.Errorf("go build with cgo: %v\n%s", err, out)
			}
		})
		if dynamic.err != nil {
			b.Fatal(dynamic.err)
		}
		bin = dynamic.path
	default:
		b.Fatalf("route %q: want \"\", \"sh\" or \"former\"", route)
	}
	script := filepath.Join(u.Dir, "dispatch.sh")
	err := errors.Join(
		os.WriteFile(script, []byte(formerDispatch), 0o755),
		os.Mkdir(filepath.Join(u.Dir, "bin"), 0o755),
		charmproc.Install(bin, filepath.Join(u.Dir, "bin", "istio-gateway")),
	)
	if err != nil {
		b.Fatal(err)
	}
	return script
}
