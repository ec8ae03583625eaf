package jujutest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// processEnv returns an environment in which the fake tools run against
// the model file at path.
func processEnv(binDir, path string) []string {
	return append(os.Environ(), "PATH="+binDir, jujutest.ModelEnv+"="+path)
}

func TestInstallTools(t *testing.T) {
	binDir := jujutest.InstallTools(t)
	if again := jujutest.InstallTools(t); again != binDir {
		t.Errorf("second InstallTools returned %q, want the cached %q", again, binDir)
	}
	for _, name := range jujutest.ToolNames() {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			t.Errorf("tool %s: %v", name, err)
		}
	}
}

// TestToolsAsProcesses runs the typed client through real processes of the
// fake tools and checks the model file, as a process-level charm test does.
func TestToolsAsProcesses(t *testing.T) {
	binDir := jujutest.InstallTools(t)
	path := filepath.Join(t.TempDir(), "model.json")
	m := &jujutest.Model{
		Unit:   "web/0",
		Leader: false,
		Config: map[string]any{"greeting": "hello world"},
		Relations: []jujutest.Relation{{
			ID: 2, Endpoint: "db", RemoteApp: "pg", RemoteUnits: []string{"pg/0"},
			RemoteUnitsData: map[string]map[string]string{"pg/0": {"host": "10.1.1.1"}},
		}},
	}
	if err := jujutest.WriteModel(path, m); err != nil {
		t.Fatal(err)
	}
	tools := juju.Tools{Runner: juju.ExecRunner{Env: processEnv(binDir, path)}}
	ctx := context.Background()

	weird := "it's \"quoted\"\n$(touch /tmp/opbus-pwned) `id` -x"
	if err := tools.StatusSet(ctx, juju.StatusBlocked, weird); err != nil {
		t.Fatal(err)
	}
	if err := tools.StateSet(ctx, map[string]string{"record": weird}); err != nil {
		t.Fatal(err)
	}
	if v, err := tools.StateGetKey(ctx, "record"); err != nil || v != weird {
		t.Errorf("state-get record: got %q, %v", v, err)
	}
	if err := tools.RelationSet(ctx, 2, map[string]string{"url": "http://web:80"}); err != nil {
		t.Fatal(err)
	}
	if d, err := tools.RelationGet(ctx, 2, "pg/0"); err != nil || d["host"] != "10.1.1.1" {
		t.Errorf("relation-get: got %v, %v", d, err)
	}
	if cfg, err := tools.ConfigGet(ctx); err != nil || cfg["greeting"] != "hello world" {
		t.Errorf("config-get: got %v, %v", cfg, err)
	}
	err := tools.StatusSetApp(ctx, juju.StatusActive, "")
	var te *juju.ToolError
	if !errors.As(err, &te) || te.ExitCode != 1 || !strings.Contains(te.Stderr, "not the leader") {
		t.Errorf("status-set --application on a non-leader: got %v", err)
	}
	err = tools.StatusSet(ctx, juju.StatusActive, "ok")
	if err != nil {
		t.Fatal(err)
	}

	got, err := jujutest.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	wantHistory := []jujutest.Status{{Status: "blocked", Message: weird}, {Status: "active", Message: "ok"}}
	if !reflect.DeepEqual(got.UnitStatusHistory, wantHistory) {
		t.Errorf("status history %q, want %q", got.UnitStatusHistory, wantHistory)
	}
	if got.State != nil || got.Staged == nil || got.Staged.State["record"] != weird {
		t.Errorf("before commit: state %v, staged %+v", got.State, got.Staged)
	}
	if n := got.CallCount("status-set"); n != 3 {
		t.Errorf("status-set called %d times, want 3", n)
	}

	if err := jujutest.CommitFile(path); err != nil {
		t.Fatal(err)
	}
	got, err = jujutest.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Staged != nil || got.State["record"] != weird || got.Relation(2).LocalUnitData["url"] != "http://web:80" {
		t.Errorf("after commit: state %v, unit data %v", got.State, got.Relation(2).LocalUnitData)
	}
	if _, err := os.Stat("/tmp/opbus-pwned"); err == nil {
		t.Error("an argument was run by a shell")
	}
}

// TestToolsProcessesInParallel checks that tool processes running at the
// same time do not lose each other's writes.
func TestToolsProcessesInParallel(t *testing.T) {
	binDir := jujutest.InstallTools(t)
	path := filepath.Join(t.TempDir(), "model.json")
	if err := jujutest.WriteModel(path, &jujutest.Model{Unit: "web/0"}); err != nil {
		t.Fatal(err)
	}
	env := processEnv(binDir, path)
	const n = 12
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := "k" + strings.Repeat("x", i)
			cmd := exec.Command(filepath.Join(binDir, "state-set"), key+"=v")
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("state-set: %v: %s", err, out)
			}
		})
	}
	wg.Wait()
	got, err := jujutest.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Staged.State) != n || got.CallCount("state-set") != n {
		t.Errorf("got %d staged keys and %d calls, want %d of each", len(got.Staged.State), got.CallCount("state-set"), n)
	}
}

// TestHooktoolsExitCodes runs the binary directly, as a shell charm would.
func TestHooktoolsExitCodes(t *testing.T) {
	binDir := jujutest.InstallTools(t)
	path := filepath.Join(t.TempDir(), "model.json")
	if err := jujutest.WriteModel(path, &jujutest.Model{Unit: "web/0"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"is-leader"}, 0, "False\n", ""},
		{[]string{"hooktools", "status-get"}, 0, "unknown\n", ""},
		{[]string{"status-set", "bogus"}, 2, "", `ERROR invalid status "bogus"`},
		{[]string{"action-get"}, 1, "", "ERROR not running an action"},
		{[]string{"relation-list", "-r", "9"}, 2, "", "relation not found"},
	}
	for _, tt := range tests {
		cmd := exec.Command(filepath.Join(binDir, tt.argv[0]), tt.argv[1:]...)
		cmd.Env = processEnv(binDir, path)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, isExit := err.(*exec.ExitError); isExit {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code || stdout.String() != tt.stdout || !strings.Contains(stderr.String(), tt.stderr) {
			t.Errorf("%q: got %d, %q, %q; want %d, %q, …%q…", tt.argv, code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
		}
	}
	if err := jujutest.DiscardFile(path); err != nil {
		t.Fatal(err)
	}
}

func ExampleModel_Exec() {
	m := &jujutest.Model{Unit: "web/0"}
	_, stderr, code := m.Exec("status-set", []string{"happy"}, nil)
	fmt.Print(code, " ", string(stderr))
	_, _, code = m.Exec("state-set", []string{"key=value"}, nil)
	fmt.Println(code, m.State, m.Staged.State)
	m.Discard() // what Juju does when the hook fails
	fmt.Println(m.State, m.Staged, m.CallCount("state-set"))
	// Output:
	// 2 ERROR invalid status "happy", expected one of [maintenance blocked waiting active]
	// 0 map[] map[key:value]
	// map[] <nil> 1
}
