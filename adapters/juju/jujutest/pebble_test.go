package jujutest_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// PebbleBinEnv names a real pebble binary: when set, the client's tests
// also run against it, to check that the fake answers as Pebble does.
const PebbleBinEnv = "OPBUS_PEBBLE_BIN"

// pebbleTarget is a Pebble the client's tests run against: the fake, or a
// real one when OPBUS_PEBBLE_BIN is set.
type pebbleTarget struct {
	name  string
	start func(t *testing.T) (c *juju.Container, base string) // base: a directory for files
}

func pebbleTargets() []pebbleTarget {
	targets := []pebbleTarget{{"fake", func(t *testing.T) (*juju.Container, string) {
		dir := jujutest.PebbleDir(t)
		jujutest.StartPebble(t, dir, "workload")
		return juju.NewContainer("workload", dir), "/srv"
	}}}
	if bin := os.Getenv(PebbleBinEnv); bin != "" {
		targets = append(targets, pebbleTarget{"real", func(t *testing.T) (*juju.Container, string) {
			return startRealPebble(t, bin), t.TempDir()
		}})
	}
	return targets
}

// startRealPebble runs a real pebble for container "workload" until the
// test ends.
func startRealPebble(t testing.TB, bin string) *juju.Container {
	t.Helper()
	c, _ := startRealPebbleProcess(t, bin)
	return c
}

// startRealPebbleProcess is startRealPebble, which also returns pebble's
// process.
func startRealPebbleProcess(t testing.TB, bin string) (*juju.Container, *os.Process) {
	t.Helper()
	dir := jujutest.PebbleDir(t)
	c := juju.NewContainer("workload", dir)
	os.MkdirAll(filepath.Dir(c.Socket), 0o755)
	cmd := exec.Command(bin, "run", "--create-dirs")
	cmd.Env = append(os.Environ(), "PEBBLE="+filepath.Join(dir, "state"), "PEBBLE_SOCKET="+c.Socket)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("pebble's output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !c.CanConnect(context.Background()) {
		if time.Now().After(deadline) {
			t.Fatalf("pebble did not answer on %s within 10s:\n%s", c.Socket, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c, cmd.Process
}

// TestPebbleFiles pushes and pulls files: content and permissions survive
// the trip, a missing file is fs.ErrNotExist with Pebble's message, and a
// missing directory is made only when asked.
func TestPebbleFiles(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, base := target.start(t)
			ctx := context.Background()
			data := append([]byte("port: 8080\n\x00\xff"), bytes.Repeat([]byte("x"), 100<<10)...)
			conf := filepath.Join(base, "etc", "app.yaml")
			if err := c.Push(ctx, conf, data, &juju.PushOptions{MakeDirs: true, Permissions: 0o600}); err != nil {
				t.Fatal(err)
			}
			got, err := c.Pull(ctx, conf)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("Pull after Push: got %d bytes, %v; want the %d pushed", len(got), err, len(data))
			}
			if err := c.Push(ctx, conf, nil, nil); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Pull(ctx, conf); err != nil || got == nil || len(got) != 0 {
				t.Errorf("Pull of an empty file: got %q, %v; want empty, nil", got, err)
			}

			missing := filepath.Join(base, "none", "x")
			_, err = c.Pull(ctx, missing)
			var pe *juju.PebbleError
			if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Kind != "not-found" {
				t.Errorf("Pull of a missing file: got %v, want a not-found PebbleError", err)
			}
			want := `juju: container "workload" (socket ` + c.Socket + `): pebble: `
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), missing) {
				t.Errorf("Pull of a missing file: got %v, want %s…%s…", err, want, missing)
			}
			if err := c.Push(ctx, missing, []byte("x"), nil); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Push into a missing directory without MakeDirs: got %v, want not-found", err)
			}
			if err := c.Push(ctx, "relative/path", []byte("x"), nil); err == nil {
				t.Error("Push to a relative path: got nil, want an error")
			}
		})
	}
}

// TestPebbleLayersAndServices adds layers as Pebble combines them and
// drives services through replan, start, stop and restart.
func TestPebbleLayersAndServices(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			base := &juju.Layer{Summary: "app", Services: map[string]*juju.Service{
				"app":    {Override: "replace", Command: "sleep 1000", Startup: "enabled", Environment: map[string]string{"A": "1"}},
				"helper": {Override: "replace", Command: "sleep 1001"},
			}}
			if err := c.AddLayer(ctx, "base", base, false); err != nil {
				t.Fatal(err)
			}
			err := c.AddLayer(ctx, "base", base, false)
			if err == nil || !strings.Contains(err.Error(), `layer "base" already exists`) || !strings.Contains(err.Error(), c.Socket) {
				t.Errorf("adding a label twice without combine: got %v, want Pebble's refusal naming the socket", err)
			}
			if err := c.AddLayer(ctx, "base", &juju.Layer{Services: map[string]*juju.Service{"app": {Command: "x"}}}, true); err == nil {
				t.Error("a service without override: got nil, want an error")
			}
			if err := c.Replan(ctx); err != nil {
				t.Fatal(err)
			}
			want := []juju.ServiceInfo{{Name: "app", Startup: "enabled", Current: "active"}, {Name: "helper", Startup: "disabled", Current: "inactive"}}
			if got, err := c.Services(ctx); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("after replan: got %+v, %v; want %+v", got, err, want)
			}
			if err := c.Start(ctx, "helper"); err != nil {
				t.Fatal(err)
			}
			if err := c.Stop(ctx, "app"); err != nil {
				t.Fatal(err)
			}
			want = []juju.ServiceInfo{{Name: "app", Startup: "enabled", Current: "inactive"}, {Name: "helper", Startup: "disabled", Current: "active"}}
			if got, err := c.Services(ctx); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("after start helper, stop app: got %+v, %v; want %+v", got, err, want)
			}
			if err := c.Restart(ctx, "app"); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Services(ctx, "app"); err != nil || len(got) != 1 || got[0].Current != "active" {
				t.Errorf("after restart: got %+v, %v; want app active", got, err)
			}
			err = c.Start(ctx, "nosuch")
			if err == nil || !strings.Contains(err.Error(), `"nosuch"`) || !strings.HasPrefix(err.Error(), `juju: container "workload"`) {
				t.Errorf("starting an unknown service: got %v, want an error naming it and the container", err)
			}
		})
	}
}

// TestPebbleChecks lists the plan's checks with their level and status.
func TestPebbleChecks(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			layer := &juju.Layer{Checks: map[string]*juju.Check{
				"alive": {Override: "replace", Level: "alive", Period: "10s", Exec: &juju.ExecCheck{Command: "true"}},
			}}
			if err := c.AddLayer(ctx, "checks", layer, false); err != nil {
				t.Fatal(err)
			}
			got, err := c.Checks(ctx)
			if err != nil || len(got) != 1 || got[0].Name != "alive" || got[0].Level != "alive" || got[0].Status != "up" || got[0].Threshold != 3 {
				t.Errorf("checks: got %+v, %v; want alive at level alive, up, threshold 3", got, err)
			}
			if got, err := c.Checks(ctx, "other"); err != nil || len(got) != 0 {
				t.Errorf("checks named other: got %+v, %v; want none", got, err)
			}
		})
	}
}

// TestPebbleExec runs commands with their input, output and exit code
// over Pebble's exec websockets.
func TestPebbleExec(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			res, err := c.Exec(ctx, []string{"echo", "hello", "world"}, nil)
			if err != nil || string(res.Stdout) != "hello world\n" || res.ExitCode != 0 {
				t.Errorf("echo: got %+v, %v", res, err)
			}
			in := bytes.Repeat([]byte("0123456789"), 20000) // several frames' worth
			res, err = c.Exec(ctx, []string{"cat"}, &juju.ExecOptions{Stdin: in})
			if err != nil || !bytes.Equal(res.Stdout, in) {
				t.Errorf("cat of %d bytes of stdin: got %d bytes, %v", len(in), len(res.Stdout), err)
			}
			res, err = c.Exec(ctx, []string{"cat", "/nonexistent-file"}, nil)
			if err != nil || res.ExitCode != 1 || !strings.Contains(string(res.Stderr), "nonexistent-file") || len(res.Stdout) != 0 {
				t.Errorf("cat of a missing file: got %+v, %v; want exit 1 and the message on stderr", res, err)
			}
			res, err = c.Exec(ctx, []string{"false"}, nil)
			if err != nil || res.ExitCode != 1 {
				t.Errorf("false: got %+v, %v; want exit code 1 and no error", res, err)
			}
			_, err = c.Exec(ctx, []string{"no-such-program-here"}, nil)
			if err == nil || !strings.Contains(err.Error(), "no-such-program-here") || !strings.Contains(err.Error(), c.Socket) {
				t.Errorf("an unknown program: got %v, want an error naming it and the socket", err)
			}
		})
	}
}

// TestPebbleCannotConnect: without Pebble listening, every call fails with
// ErrCannotConnect and an error naming the container and the socket.
func TestPebbleCannotConnect(t *testing.T) {
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	c := juju.NewContainer("workload", dir)
	ctx := context.Background()
	if !c.CanConnect(ctx) {
		t.Fatal("CanConnect with the fake listening: got false")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if c.CanConnect(ctx) {
		t.Error("CanConnect after Close: got true")
	}
	_, err := c.Pull(ctx, "/x")
	want := `juju: container "workload" (socket ` + filepath.Join(dir, "workload", "pebble.socket") + `): pull /x: cannot connect to pebble`
	if !errors.Is(err, juju.ErrCannotConnect) || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Pull without Pebble: got %v, want ErrCannotConnect and %s…", err, want)
	}
	if _, err := c.Exec(ctx, []string{"true"}, nil); !errors.Is(err, juju.ErrCannotConnect) {
		t.Errorf("Exec without Pebble: got %v, want ErrCannotConnect", err)
	}
}

// TestFakePebbleExecFunc: a test's ExecFunc sees the command, its
// environment and input, and its error fails the command.
func TestFakePebbleExecFunc(t *testing.T) {
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	var seen *jujutest.ExecRequest
	p.SetExec(func(_ *jujutest.Pebble, req *jujutest.ExecRequest) (*juju.ExecResult, error) {
		seen = req
		if req.Command[0] == "migrate" {
			return nil, errors.New("timed out after 1s")
		}
		return &juju.ExecResult{Stdout: []byte("out"), Stderr: []byte("err"), ExitCode: 7}, nil
	})
	c := juju.NewContainer("workload", dir)
	ctx := context.Background()
	res, err := c.Exec(ctx, []string{"psql", "-c", "select 1"}, &juju.ExecOptions{Environment: map[string]string{"PGHOST": "db"}, WorkingDir: "/tmp", Stdin: []byte("in")})
	if err != nil || string(res.Stdout) != "out" || string(res.Stderr) != "err" || res.ExitCode != 7 {
		t.Errorf("got %+v, %v", res, err)
	}
	want := &jujutest.ExecRequest{Command: []string{"psql", "-c", "select 1"}, Environment: map[string]string{"PGHOST": "db"}, WorkingDir: "/tmp", Stdin: []byte("in")}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("the ExecFunc saw %+v, want %+v", seen, want)
	}
	_, err = c.Exec(ctx, []string{"migrate"}, nil)
	if err == nil || !strings.HasSuffix(err.Error(), "pebble: timed out after 1s") {
		t.Errorf("a command that cannot run: got %v, want Pebble's change error", err)
	}
}

// TestFakePebbleReplan: layers combine as Pebble's do (merge merges maps
// and appends lists, replace replaces), and a replan restarts only the
// services whose definition changed.
func TestFakePebbleReplan(t *testing.T) {
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	c := juju.NewContainer("workload", dir)
	ctx := context.Background()
	add := func(label string, svc *juju.Service, combine bool) {
		t.Helper()
		if err := c.AddLayer(ctx, label, &juju.Layer{Services: map[string]*juju.Service{"app": svc}}, combine); err != nil {
			t.Fatal(err)
		}
	}
	replan := func(wantStarts int) {
		t.Helper()
		if err := c.Replan(ctx); err != nil {
			t.Fatal(err)
		}
		if got := p.Starts("app"); got != wantStarts {
			t.Errorf("app started %d times, want %d", got, wantStarts)
		}
	}
	add("base", &juju.Service{Override: "replace", Command: "app", Startup: "enabled", Environment: map[string]string{"A": "1"}, After: []string{"db"}}, false)
	replan(1)
	replan(1) // nothing changed
	add("override", &juju.Service{Override: "merge", Environment: map[string]string{"B": "2"}, After: []string{"cache"}}, false)
	if got := p.Starts("app"); got != 1 {
		t.Errorf("adding a layer started app: %d starts, want 1", got)
	}
	replan(2)
	want := &juju.Service{Override: "replace", Command: "app", Startup: "enabled", Environment: map[string]string{"A": "1", "B": "2"}, After: []string{"db", "cache"}}
	if got := p.Plan().Services["app"]; !reflect.DeepEqual(got, want) {
		t.Errorf("merged plan: got %+v, want %+v", got, want)
	}
	add("base", &juju.Service{Override: "replace", Command: "app2", Startup: "enabled"}, true)
	replan(3)
	want = &juju.Service{Override: "replace", Command: "app2", Startup: "enabled", Environment: map[string]string{"B": "2"}, After: []string{"cache"}}
	if got := p.Plan().Services["app"]; !reflect.DeepEqual(got, want) {
		t.Errorf("after replacing in the combined base layer: got %+v, want %+v", got, want)
	}
	if got := p.Layers(); !reflect.DeepEqual(got, []string{"base", "override"}) {
		t.Errorf("layers: got %q", got)
	}
}

// BenchmarkPebble measures the client's round trips: the system-info probe
// behind containers.<name>.can_connect, a push, and an exec (a request,
// three websockets and the change's wait), against the fake and, when
// OPBUS_PEBBLE_BIN names one, a real pebble.
func BenchmarkPebble(b *testing.B) {
	targets := []struct {
		name  string
		start func(b *testing.B) *juju.Container
	}{{"fake", func(b *testing.B) *juju.Container {
		dir := jujutest.PebbleDir(b)
		jujutest.StartPebble(b, dir, "workload")
		return juju.NewContainer("workload", dir)
	}}}
	if bin := os.Getenv(PebbleBinEnv); bin != "" {
		targets = append(targets, struct {
			name  string
			start func(b *testing.B) *juju.Container
		}{"real", func(b *testing.B) *juju.Container { return startRealPebble(b, bin) }})
	}
	ctx := context.Background()
	for _, target := range targets {
		c := target.start(b)
		b.Run(target.name+"/system-info", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !c.CanConnect(ctx) {
					b.Fatal("cannot connect")
				}
			}
		})
		b.Run(target.name+"/push-1KiB", func(b *testing.B) {
			b.ReportAllocs()
			path := filepath.Join(os.TempDir(), "opbus-bench", "push")
			data := bytes.Repeat([]byte("x"), 1024)
			for b.Loop() {
				if err := c.Push(ctx, path, data, &juju.PushOptions{MakeDirs: true}); err != nil {
					b.Fatal(err)
				}
			}
			os.RemoveAll(filepath.Dir(path))
		})
		b.Run(target.name+"/exec-echo", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Exec(ctx, []string{"echo", "hi"}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPebbleExecCancel: cancelling ctx ends Exec with ctx's error while
// the command still runs.
func TestPebbleExecCancel(t *testing.T) {
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	p.SetExec(func(*jujutest.Pebble, *jujutest.ExecRequest) (*juju.ExecResult, error) {
		close(started)
		<-release
		return &juju.ExecResult{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := juju.NewContainer("workload", dir).Exec(ctx, []string{"sleep"}, nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `container "workload"`) {
		t.Errorf("got %v, want context.Canceled naming the container", err)
	}
}

// TestPebbleNotices records custom notices and reads them back by ID: the
// same key is the same notice occurring again.
func TestPebbleNotices(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			id, err := c.Notify(ctx, "example.com/backup-done", map[string]string{"path": "/backups/1"})
			if err != nil {
				t.Fatal(err)
			}
			again, err := c.Notify(ctx, "example.com/backup-done", map[string]string{"path": "/backups/2"})
			if err != nil || again != id {
				t.Errorf("the same key again: got ID %q, %v; want %q", again, err, id)
			}
			n, err := c.Notice(ctx, id)
			if err != nil || n.ID != id || n.Type != "custom" || n.Key != "example.com/backup-done" || n.Occurrences != 2 || n.LastData["path"] != "/backups/2" {
				t.Errorf("Notice(%s): got %+v, %v", id, n, err)
			}
			if _, err := c.Notice(ctx, "9999"); err == nil || !strings.Contains(err.Error(), `cannot find notice with ID "9999"`) {
				t.Errorf("a missing notice: got %v, want Pebble's not-found message", err)
			}
			if _, err := c.Notify(ctx, "backup-done", nil); err == nil || !strings.Contains(err.Error(), "example.com/path") {
				t.Errorf("a key without a domain: got %v, want Pebble's refusal", err)
			}
		})
	}
}

// TestFakePebbleRestart: the fake's system-info gives a boot ID, as
// Pebble's does, and a restart gives a new one with only what the image
// holds: the files of WriteFile, no pushed file, no layer, no service.
func TestFakePebbleRestart(t *testing.T) {
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	c := juju.NewContainer("workload", dir)
	ctx := context.Background()
	p.WriteFile("/etc/image.conf", []byte("from the image"))
	if err := c.Push(ctx, "/etc/pushed.conf", []byte("pushed"), nil); err != nil {
		t.Fatal(err)
	}
	layer := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "replace", Command: "app", Startup: "enabled"}}}
	if err := c.AddLayer(ctx, "app", layer, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Replan(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := c.Info(ctx)
	if err != nil || before.BootID == "" || before.BootID != p.BootID() {
		t.Fatalf("system-info: got %+v, %v; want the fake's boot ID %q", before, err, p.BootID())
	}
	p.Restart()
	after, err := c.Info(ctx)
	if err != nil || after.BootID == before.BootID || after.BootID != p.BootID() {
		t.Errorf("after a restart: boot ID %+v, %v; want a new one, not %q", after, err, before.BootID)
	}
	if _, err := c.Pull(ctx, "/etc/pushed.conf"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pushed file after a restart: got %v, want fs.ErrNotExist", err)
	}
	if data, err := c.Pull(ctx, "/etc/image.conf"); err != nil || string(data) != "from the image" {
		t.Errorf("the image's file after a restart: got %q, %v", data, err)
	}
	if svcs, err := c.Services(ctx); err != nil || len(svcs) != 0 || len(p.Layers()) != 0 || p.Starts("app") != 0 {
		t.Errorf("after a restart: services %+v, %v, layers %q, %d starts; want none", svcs, err, p.Layers(), p.Starts("app"))
	}
}

// TestPebbleInfo: system-info gives Pebble's version and boot ID, the
// same while it runs.
func TestPebbleInfo(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			first, err := c.Info(ctx)
			if err != nil || first.Version == "" || first.BootID == "" {
				t.Fatalf("got %+v, %v; want a version and a boot ID", first, err)
			}
			if again, err := c.Info(ctx); err != nil || *again != *first {
				t.Errorf("again: got %+v, %v; want %+v", again, err, first)
			}
		})
	}
}
