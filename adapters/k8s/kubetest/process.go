package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// logTailLines is how many lines of a program's log go into an error.
const logTailLines = 50

// process is a running program whose output goes to a log file.
type process struct {
	name string // program name, for messages
	log  string // path of the log file
	cmd  *exec.Cmd
	done chan struct{} // closed when the program has exited
	err  error         // the result of Wait; read only after done is closed
}

// startProcess starts the program at path with args, appending its standard
// output and error to the file logPath. The program runs until stop is called
// or the test binary exits.
func startProcess(name, path string, args []string, logPath string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %s log: %w", name, err)
	}
	fmt.Fprintf(f, "=== kubetest: %s: %s %s\n", time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = childEnv(os.Environ())
	setParentDeathSignal(cmd)
	p := &process{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go p.run(started, f)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("kubetest: start %s: %w", name, err)
	}
	return p, nil
}

// run starts the program and waits for it to exit. It keeps its goroutine on
// one OS thread for the life of the program: on Linux the program is killed
// when the thread that started it ends (see setParentDeathSignal), so the
// thread must live exactly as long as the wait.
func (p *process) run(started chan<- error, log *os.File) {
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	err := p.cmd.Start()
	log.Close() // the program has its own copy
	started <- err
	if err != nil {
		return
	}
	p.err = p.cmd.Wait()
	close(p.done)
}

// stop sends SIGTERM, waits up to grace for the program to exit, then kills it
// and waits. It reports an error if the program had already exited on its own.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.exitError("exited unexpectedly")
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err == nil {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
			return nil
		case <-timer.C:
		}
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kubetest: kill %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// exitError describes the exit of the program, with the end of its log.
// Call it only after done is closed.
func (p *process) exitError(what string) error {
	return fmt.Errorf("kubetest: %s %s (%v)%s", p.name, what, p.err, p.logTail())
}

// logTail returns the last lines of the log, ready to append to a message.
func (p *process) logTail() string {
	lines, err := tail(p.log, logTailLines)
	if err != nil {
		return fmt.Sprintf("\n(reading %s: %v)", p.log, err)
	}
	return fmt.Sprintf("\n--- last %d lines of %s ---\n%s", len(lines), p.log, strings.Join(lines, "\n"))
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) ([]string, error) {
	const maxRead = 256 << 10
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	offset := max(info.Size()-maxRead, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, offset, info.Size()-offset))
	if err != nil {
		return nil, err
	}
	data = bytes.TrimRight(data, "\n")
	if len(data) == 0 {
		return nil, nil
	}
	lines := strings.Split(string(data), "\n")
	if offset > 0 && len(lines) > 1 {
		lines = lines[1:] // the first line read is probably cut
	}
	return lines[max(len(lines)-n, 0):], nil
}

// childEnv returns environ without the ETCD_* variables, which etcd would
// read as flags.
func childEnv(environ []string) []string {
	env := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	return env
}
