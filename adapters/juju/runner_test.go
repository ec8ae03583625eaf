package juju

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opbus/opbus"
)

// The test binary doubles as the helper tools below when it is started
// through a symlink with one of their names.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "opbus-echo":
		// Print the arguments and standard input received, as JSON.
		stdin, _ := readAll(os.Stdin)
		out, _ := json.Marshal(map[string]any{"args": os.Args[1:], "stdin": string(stdin)})
		os.Stdout.Write(out)
		os.Exit(0)
	case "opbus-fail":
		// Print args[1] on stderr and exit with code args[0].
		code, _ := strconv.Atoi(os.Args[1])
		fmt.Fprint(os.Stderr, os.Args[2])
		os.Exit(code)
	case "opbus-block":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "opbus-orphan":
		// Leave a process holding standard output open, and exit.
		exe, _ := os.Executable()
		linger := exec.Command(exe)
		linger.Args[0] = "opbus-linger"
		linger.Stdout = os.Stdout
		if err := linger.Start(); err != nil {
			os.Exit(3)
		}
		fmt.Print("done")
		os.Exit(0)
	case "opbus-linger":
		time.Sleep(3 * time.Second)
		os.Exit(0)
	case "opbus-charm":
		// A charm whose one handler subscribes to the fields listed in
		// OPBUS_TEST_FIELDS, separated by spaces.
		fields := strings.Fields(os.Getenv("OPBUS_TEST_FIELDS"))
		Main(func(b *opbus.Bus) error {
			return b.Handle("h", func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Active(""), nil }, opbus.On{Fields: fields})
		}, nil)
		os.Exit(0)
	case "opbus-pebble-charm":
		Main(pebbleCharm, nil) // pebble_process_test.go
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func readAll(f *os.File) ([]byte, error) {
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return b, nil
		}
	}
}

// quickExit keeps a helper built with -race from sleeping a second at exit.
const quickExit = "GORACE=atexit_sleep_ms=0"

// helperRunner returns an ExecRunner that finds the helper tools.
func helperRunner(t *testing.T) ExecRunner {
	return ExecRunner{Dir: helperDir(t), Env: append(os.Environ(), quickExit)}
}

// helperDir returns a directory holding symlinks to the test binary named
// after the helper tools.
func helperDir(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"opbus-echo", "opbus-fail", "opbus-block", "opbus-orphan", "opbus-linger"} {
		if err := os.Symlink(exe, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestExecRunnerPassesArgumentsUnchanged(t *testing.T) {
	r := helperRunner(t)
	tests := []struct {
		name  string
		args  []string
		stdin []byte
	}{
		{"no args", nil, nil},
		{"spaces", []string{"two words", "  padded  "}, nil},
		{"quotes", []string{`"double"`, `'single'`, `it's`, `\"escaped\"`}, nil},
		{"newlines", []string{"line one\nline two", "\n", "tab\there"}, nil},
		{"shell syntax", []string{"$(touch /tmp/opbus-pwned)", "`id`", "$HOME", "a;b", "a|b", "a && b", "*", "~", "> out"}, nil},
		{"leading dash", []string{"-", "--", "-x", "--flag=value", "-- leading"}, nil},
		{"empty", []string{"", "", "x"}, nil},
		{"unicode", []string{"héllo wörld ✓", "\u2028"}, nil},
		{"stdin", []string{"--file", "-"}, []byte("{\"k\": \"v w\"}\n$(x)\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.Run(context.Background(), "opbus-echo", tt.args, tt.stdin)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Args  []string `json:"args"`
				Stdin string   `json:"stdin"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			want := tt.args
			if want == nil {
				want = []string{}
			}
			if got.Args == nil {
				got.Args = []string{}
			}
			if !slices.Equal(got.Args, want) {
				t.Errorf("got args %q, want %q", got.Args, want)
			}
			if got.Stdin != string(tt.stdin) {
				t.Errorf("got stdin %q, want %q", got.Stdin, tt.stdin)
			}
		})
	}
	if _, err := os.Stat("/tmp/opbus-pwned"); err == nil {
		t.Error("an argument was run by a shell")
	}
}

func TestExecRunnerToolError(t *testing.T) {
	r := helperRunner(t)
	args := []string{"2", "ERROR invalid status \"x\"\n\n"}
	_, err := r.Run(context.Background(), "opbus-fail", args, nil)
	var te *ToolError
	if !errors.As(err, &te) {
		t.Fatalf("got %T %v, want *ToolError", err, err)
	}
	if te.Tool != "opbus-fail" || te.ExitCode != 2 || !slices.Equal(te.Args, args) || te.Stderr != args[1] {
		t.Errorf("got %+v", te)
	}
	want := `juju: opbus-fail exited with code 2: ERROR invalid status "x"`
	if err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}

func TestExecRunnerBoundsStderr(t *testing.T) {
	r := helperRunner(t)
	_, err := r.Run(context.Background(), "opbus-fail", []string{"1", strings.Repeat("x", maxStderr+10)}, nil)
	var te *ToolError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want *ToolError", err)
	}
	if !strings.HasPrefix(te.Stderr, strings.Repeat("x", maxStderr)+"…") || !strings.HasSuffix(te.Stderr, "(10 more bytes)") {
		t.Errorf("got stderr of %d bytes ending %q", len(te.Stderr), te.Stderr[len(te.Stderr)-20:])
	}
}

func TestToolErrorMessage(t *testing.T) {
	tests := []struct {
		err  ToolError
		want string
	}{
		{ToolError{Tool: "is-leader", ExitCode: 1}, "juju: is-leader exited with code 1"},
		{ToolError{Tool: "is-leader", ExitCode: 1, Stderr: "  \n"}, "juju: is-leader exited with code 1"},
		{ToolError{Tool: "state-set", ExitCode: 1, Stderr: "ERROR boom\n"}, "juju: state-set exited with code 1: ERROR boom"},
		{ToolError{Tool: "state-get", ExitCode: -1}, "juju: state-get was terminated"},
		{ToolError{Tool: "action-set", Args: []string{"secret=hunter2"}, ExitCode: 2}, "juju: action-set exited with code 2"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestExecRunnerToolNotFound(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		runner ExecRunner
		want   []string
	}{
		{"dir", ExecRunner{Dir: dir}, []string{`"status-set"`, dir}},
		{"PATH from Env", ExecRunner{Env: []string{"PATH=/nonexistent:" + dir}}, []string{`"status-set"`, `PATH "/nonexistent:` + dir + `"`}},
		{"relative PATH entries are ignored", ExecRunner{Env: []string{"PATH=."}}, []string{`"status-set"`, `PATH "."`}},
	}
	if err := os.WriteFile(filepath.Join(dir, "not-executable"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.runner.Run(context.Background(), "status-set", nil, nil)
			if !errors.Is(err, ErrToolNotFound) {
				t.Fatalf("got %v, want ErrToolNotFound", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
	if _, err := (ExecRunner{Dir: dir}).Run(context.Background(), "not-executable", nil, nil); !errors.Is(err, ErrToolNotFound) {
		t.Errorf("non-executable file: got %v, want ErrToolNotFound", err)
	}
}

func TestExecRunnerLooksUpPATH(t *testing.T) {
	dir := helperDir(t)
	r := ExecRunner{Env: []string{"PATH=/nonexistent:relative:" + dir, quickExit}}
	out, err := r.Run(context.Background(), "opbus-echo", []string{"a"}, nil)
	if err != nil || !strings.Contains(string(out), `"args":["a"]`) {
		t.Errorf("got %q, %v", out, err)
	}
	t.Setenv("PATH", dir)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	if _, err := (ExecRunner{}).Run(context.Background(), "opbus-echo", nil, nil); err != nil {
		t.Errorf("zero ExecRunner: %v", err)
	}
}

func TestExecRunnerRejectsPaths(t *testing.T) {
	for _, name := range []string{"", "../opbus-echo", "/bin/sh", "a/b"} {
		_, err := (ExecRunner{Dir: helperDir(t)}).Run(context.Background(), name, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "invalid hook tool name") {
			t.Errorf("Run(%q) = %v, want invalid name error", name, err)
		}
	}
}

func TestExecRunnerCancel(t *testing.T) {
	r := helperRunner(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Run(ctx, "opbus-block", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > waitDelay {
		t.Errorf("Run took %v after cancellation", d)
	}
	cancelled, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	if _, err := r.Run(cancelled, "opbus-echo", nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("already cancelled: got %v, want context.Canceled", err)
	}
}

func TestExecRunnerOutputHeldOpen(t *testing.T) {
	defer func(s, w time.Duration) { slowTool, waitDelay = s, w }(slowTool, waitDelay)
	slowTool, waitDelay = 50*time.Millisecond, 200*time.Millisecond
	r := helperRunner(t)
	start := time.Now()
	out, err := r.Run(context.Background(), "opbus-orphan", nil, nil)
	if err != nil || string(out) != "done" {
		t.Errorf("got %q, %v; want the tool's output", out, err)
	}
	if d := time.Since(start); d < slowTool+waitDelay || d > 2*time.Second {
		t.Errorf("Run took %v with a grandchild holding the output open, want about %v", d, slowTool+waitDelay)
	}
}

func TestExecRunnerConcurrent(t *testing.T) {
	r := helperRunner(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			arg := fmt.Sprintf("call %d", i)
			out, err := r.Run(context.Background(), "opbus-echo", []string{arg}, nil)
			if err != nil || !strings.Contains(string(out), arg) {
				t.Errorf("call %d: got %q, %v", i, out, err)
			}
		})
	}
	wg.Wait()
}
