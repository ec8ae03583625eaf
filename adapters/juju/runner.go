package juju

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Runner runs one hook tool (status-set, relation-get, …) and returns what it
// printed on standard output.
//
// The contract every implementation keeps:
//   - Run is safe for concurrent use by multiple goroutines.
//   - name is a bare tool name ("status-set"), never a path; args are passed to
//     the tool one element per argument, exactly as given (no shell, no
//     splitting, no globbing); stdin, when non-nil, is the tool's standard input.
//   - Run neither modifies args or stdin nor keeps them after it returns. The
//     returned slice belongs to the caller.
//   - A tool that ran and exited non-zero is reported as a [*ToolError]
//     (callers use [errors.As]). A tool that does not exist is reported with an
//     error wrapping [ErrToolNotFound].
//   - When ctx is cancelled or its deadline passes, Run stops the tool (an
//     exec implementation kills the process) and returns an error wrapping
//     ctx.Err().
type Runner interface {
	Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error)
}

// ErrToolNotFound is wrapped by the error a [Runner] returns when the named
// hook tool does not exist.
var ErrToolNotFound = errors.New("juju: hook tool not found")

// ToolError reports a hook tool that ran and failed. Its message names the
// tool, the exit code and the tool's standard error; it leaves out Args,
// which can carry relation data or action results.
type ToolError struct {
	// Tool is the tool's name, such as "status-set".
	Tool string
	// Args are the arguments the tool was run with.
	Args []string
	// ExitCode is the tool's exit status, or -1 when it was ended by a signal.
	ExitCode int
	// Stderr is what the tool printed on standard error (bounded in size).
	Stderr string
}

// Error implements the error interface.
func (e *ToolError) Error() string {
	var b strings.Builder
	if e.ExitCode < 0 {
		fmt.Fprintf(&b, "juju: %s was terminated", e.Tool)
	} else {
		fmt.Fprintf(&b, "juju: %s exited with code %d", e.Tool, e.ExitCode)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	return b.String()
}

// maxStderr bounds how much of a tool's standard error is kept.
const maxStderr = 64 << 10

// waitDelay bounds how long Run waits for a tool's output pipes to close
// once it has exited or been killed (a grandchild can hold them open), and
// slowTool is how long it waits for them before it also waits for the
// process to exit. Variables for tests.
var (
	waitDelay = 5 * time.Second
	slowTool  = time.Second
)

// ExecRunner is a [Runner] that starts each tool as a process with os/exec,
// passing arguments as a list (never through a shell). Its zero value looks
// tools up in PATH and gives them the current process's environment, which
// is what a charm run by Juju needs.
type ExecRunner struct {
	// Dir, if non-empty, is the only directory tools are looked up in;
	// otherwise they are looked up in PATH (from Env when Env is non-nil).
	// Relative PATH entries are ignored.
	Dir string
	// Env, if non-nil, is the tools' environment, as in [exec.Cmd.Env];
	// nil means the current process's environment.
	Env []string
}

var _ Runner = ExecRunner{}

// Run implements [Runner].
//
// It waits for the tool to close its output before it waits for the tool
// to exit: reading parks the goroutine in the runtime's network poller,
// whereas waiting for the exit keeps a thread in a system call, which the
// runtime polls for as long as the tool runs (a millisecond of CPU or more
// per call on a busy machine). A tool whose output is still open after a
// second is waited for as exec.Cmd does, and a process it leaves holding
// its output open is given [waitDelay] after the tool exits.
func (r ExecRunner) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	path, err := r.lookup(name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("juju: %s: %w", name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("juju: running %s: %w", name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("juju: running %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = name
	cmd.Env = r.Env
	cmd.Stdout, cmd.Stderr = outW, errW
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err = cmd.Start()
	outW.Close() // the tool holds the write ends now
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("juju: running %s: %w", name, err)
	}

	stopKill := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stopKill()
	var stdout bytes.Buffer
	stderr := &boundedBuffer{max: maxStderr}
	read := make(chan struct{}, 2)
	go func() { stdout.ReadFrom(outR); read <- struct{}{} }()
	go func() { stderr.ReadFrom(errR); read <- struct{}{} }()
	slow := time.NewTimer(slowTool)
	defer slow.Stop()
	pending := 2
	for waiting := true; waiting && pending > 0; {
		select {
		case <-read:
			pending--
		case <-ctx.Done(): // the tool is being killed
			waiting = false
		case <-slow.C:
			waiting = false
		}
	}
	err = cmd.Wait()
	if pending > 0 {
		drained := time.NewTimer(waitDelay)
		for ; pending > 0; pending-- {
			select {
			case <-read:
			case <-drained.C:
				outR.Close() // ends the reads
				errR.Close()
				<-read
			}
		}
		drained.Stop()
	}
	outR.Close()
	errR.Close()
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("juju: %s: %w", name, ctx.Err())
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return nil, &ToolError{
			Tool:     name,
			Args:     slices.Clone(args),
			ExitCode: exitErr.ExitCode(),
			Stderr:   stderr.String(),
		}
	}
	return nil, fmt.Errorf("juju: running %s: %w", name, err)
}

// lookup finds the executable for the tool name in r.Dir or in PATH.
func (r ExecRunner) lookup(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator) {
		return "", fmt.Errorf("juju: invalid hook tool name %q", name)
	}
	if r.Dir != "" {
		p := filepath.Join(r.Dir, name)
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("%w: %q in %s", ErrToolNotFound, name, r.Dir)
	}
	pathList := os.Getenv("PATH")
	if r.Env != nil {
		pathList = ""
		for _, kv := range r.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				pathList = v // the last one wins, as in exec.Cmd
			}
		}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %q in PATH %q", ErrToolNotFound, name, pathList)
}

// isExecutable reports whether path names a regular file with an execute bit.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// boundedBuffer keeps the first max bytes written to it and counts the rest.
type boundedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

// Write keeps what fits and drops the rest; it never fails.
func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - b.buf.Len(); room < len(p) {
		b.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	b.buf.Write(p)
	return n, nil
}

// ReadFrom writes what r yields until EOF or an error, which it returns
// (EOF as nil).
func (b *boundedBuffer) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	buf := make([]byte, 8<<10)
	for {
		m, err := r.Read(buf)
		b.Write(buf[:m])
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// String returns what was kept, noting how much was dropped.
func (b *boundedBuffer) String() string {
	if b.dropped == 0 {
		return b.buf.String()
	}
	return fmt.Sprintf("%s… (%d more bytes)", b.buf.String(), b.dropped)
}
