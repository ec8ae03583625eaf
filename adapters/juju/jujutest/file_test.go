package jujutest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// cloneModel returns a deep copy of m made through JSON, numbers kept as
// json.Number as ReadModel keeps them.
func cloneModel(t *testing.T, m *Model) *Model {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	c := new(Model)
	if err := decodeModel(data, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestModelRoundTripsThroughFile(t *testing.T) {
	m := newModel()
	m.Exec("status-set", []string{"active", "x"}, nil)
	m.Exec("action-set", []string{"a.b=1"}, nil)
	m.Exec("state-delete", []string{"k"}, nil) // staged state: empty, not nil
	m.Exec("relation-set", []string{"-r", "3", "a="}, nil)
	m.Logs = append(m.Logs, LogLine{Level: "INFO", Message: "x"})

	path := filepath.Join(t.TempDir(), "model.json")
	if err := WriteModel(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := cloneModel(t, m); !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
	if got.Staged.State == nil || len(got.Staged.State) != 0 {
		t.Errorf("an emptied staged state came back as %#v", got.Staged.State)
	}
}

func TestCommitAndDiscardFile(t *testing.T) {
	dir := t.TempDir()
	for _, commit := range []bool{true, false} {
		m := newModel()
		m.Exec("state-set", []string{"n=1"}, nil)
		m.Exec("status-set", []string{"blocked", "b"}, nil)
		path := filepath.Join(dir, "model.json")
		if err := WriteModel(path, m); err != nil {
			t.Fatal(err)
		}
		apply, wantState := DiscardFile, map[string]string{"k": "v"}
		if commit {
			apply, wantState = CommitFile, map[string]string{"k": "v", "n": "1"}
		}
		if err := apply(path); err != nil {
			t.Fatal(err)
		}
		got, err := ReadModel(path)
		if err != nil {
			t.Fatal(err)
		}
		if got.Staged != nil || !reflect.DeepEqual(got.State, wantState) || got.UnitStatus.Status != "blocked" {
			t.Errorf("commit=%v: staged %+v, state %v, status %v", commit, got.Staged, got.State, got.UnitStatus)
		}
	}
}

func TestReadModelErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadModel(filepath.Join(dir, "missing.json")); err == nil || !strings.HasPrefix(err.Error(), "jujutest: ") {
		t.Errorf("missing file: got %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o600)
	if _, err := ReadModel(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad file: got %v, want an error naming it", err)
	}
	if err := CommitFile(bad); err == nil {
		t.Error("CommitFile on a bad file: got nil error")
	}
}

// toolMain runs ToolMain against the model file at path.
func toolMain(path string, stdin string, args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	getenv := func(k string) string {
		if k == ModelEnv {
			return path
		}
		return ""
	}
	code = ToolMain(args, strings.NewReader(stdin), &out, &errOut, getenv)
	return out.String(), errOut.String(), code
}

func TestToolMain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.json")
	if err := WriteModel(path, newModel()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		stdin       string
		args        []string
		out, errHas string
		code        int
	}{
		{"by symlink name", "", []string{"/bin/dir/is-leader", "--format=json"}, "true\n", "", 0},
		{"by argument", "", []string{"hooktools", "state-get", "k"}, "v\n", "", 0},
		{"stdin", `{"s": "1"}`, []string{"state-set", "--file", "-"}, "", "", 0},
		{"stdin after =", `{"t": "2"}`, []string{"state-set", "--file=-"}, "", "", 0},
		{"failure", "", []string{"status-set", "bogus"}, "", `ERROR invalid status "bogus"`, 2},
		{"unknown tool", "", []string{"leader-get"}, "", `unknown hook tool "leader-get"`, 127},
		{"no tool", "", []string{"hooktools"}, "", "usage: hooktools", 2},
		{"no program", "", nil, "", "no program name", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := toolMain(path, tt.stdin, tt.args...)
			if code != tt.code || out != tt.out || !strings.Contains(errOut, tt.errHas) {
				t.Errorf("got %q, %q, %d; want %q, …%q…, %d", out, errOut, code, tt.out, tt.errHas, tt.code)
			}
		})
	}
	m, err := ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"k": "v", "s": "1", "t": "2"}; !reflect.DeepEqual(m.Staged.State, want) {
		t.Errorf("staged state %v, want %v", m.Staged.State, want)
	}
	if len(m.Calls) != 5 || m.Calls[4].Exit != 2 {
		t.Errorf("calls %v, want 5 ending in a failed status-set", m.Calls)
	}
	if _, errOut, code := toolMain("", "", "is-leader"); code != 1 || !strings.Contains(errOut, ModelEnv) {
		t.Errorf("without %s: got %d %q", ModelEnv, code, errOut)
	}
}

func TestUpdateModelSerialises(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.json")
	if err := WriteModel(path, &Model{Unit: "a/0"}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, errOut, code := toolMain(path, "", "juju-log", "x"); code != 0 {
				t.Errorf("juju-log: %d %s", code, errOut)
			}
		})
	}
	wg.Wait()
	m, err := ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Logs) != n || m.CallCount("juju-log") != n {
		t.Errorf("got %d logs and %d calls, want %d: updates were lost", len(m.Logs), m.CallCount("juju-log"), n)
	}
}

func TestReadsStdin(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"--file", "-"}, true},
		{[]string{"-r", "1", "--file=-"}, true},
		{[]string{"--file", "x"}, false},
		{[]string{"--", "--file", "-"}, false},
		{[]string{"--file"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := readsStdin(tt.args); got != tt.want {
			t.Errorf("readsStdin(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
