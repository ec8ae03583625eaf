package jujutest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/internal/websocket"
)

// ExecRequest is a command a charm runs in a fake [Pebble] container.
type ExecRequest struct {
	// Command is the program and its arguments.
	Command []string
	// Environment, WorkingDir and User are as the charm asked.
	Environment map[string]string
	WorkingDir  string
	User        string
	// Stdin is everything the charm sent on standard input.
	Stdin []byte
}

// ExecFunc runs a command in a fake [Pebble]: it returns what the command
// wrote and its exit code, or an error when the command cannot run (the
// change then fails with the error's message, as Pebble's does for a
// command it cannot start or a timeout).
type ExecFunc func(p *Pebble, req *ExecRequest) (*juju.ExecResult, error)

// SetExec sets how the fake runs commands; nil means [BuiltinExec].
func (p *Pebble) SetExec(fn ExecFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exec = fn
}

// BuiltinExec runs the few commands a fake container has: echo (its
// arguments, joined by spaces, and a newline), cat (the named files of the
// container's filesystem, or standard input), true, false and exit <code>.
// The fake refuses any other program, as Pebble refuses one it cannot
// find, before the command starts.
func BuiltinExec(p *Pebble, req *ExecRequest) (*juju.ExecResult, error) {
	args := req.Command[1:]
	res := &juju.ExecResult{Stdout: []byte{}, Stderr: []byte{}}
	switch req.Command[0] {
	case "echo":
		res.Stdout = []byte(strings.Join(args, " ") + "\n")
	case "cat":
		if len(args) == 0 {
			res.Stdout = req.Stdin
		}
		for _, name := range args {
			data, ok := p.File(name)
			if !ok {
				res.Stderr = fmt.Appendf(res.Stderr, "cat: %s: No such file or directory\n", name)
				res.ExitCode = 1
				continue
			}
			res.Stdout = append(res.Stdout, data...)
		}
	case "true":
	case "false":
		res.ExitCode = 1
	case "exit":
		if len(args) != 1 {
			return nil, errors.New("exit: want one argument")
		}
		fmt.Sscan(args[0], &res.ExitCode)
	default:
		return nil, fmt.Errorf("cannot find executable %q", req.Command[0])
	}
	return res, nil
}

// pebbleExec is a command waiting for, or running with, its websockets.
type pebbleExec struct {
	req       ExecRequest
	split     bool
	ch        *pebbleChange
	mu        sync.Mutex
	ws        map[string]*websocket.Conn
	connected chan struct{} // closed once stdio (and stderr if split) are connected
}

// execConnectTimeout is how long a command waits for its websockets, as
// Pebble's does.
const execConnectTimeout = 5 * time.Second

func (p *Pebble) postExec(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Command     []string          `json:"command"`
		Environment map[string]string `json:"environment"`
		WorkingDir  string            `json:"working-dir"`
		User        string            `json:"user"`
		SplitStderr bool              `json:"split-stderr"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		errorResponse(w, http.StatusBadRequest, "", "cannot decode request body: %v", err)
		return
	}
	if len(req.Command) == 0 {
		errorResponse(w, http.StatusBadRequest, "", "must specify command")
		return
	}
	p.mu.Lock()
	fn := p.exec
	p.mu.Unlock()
	if fn == nil {
		fn = BuiltinExec
		if !slices.Contains([]string{"echo", "cat", "true", "false", "exit"}, req.Command[0]) {
			errorResponse(w, http.StatusBadRequest, "", "cannot find executable %q", req.Command[0])
			return
		}
	}
	e := &pebbleExec{
		req:   ExecRequest{Command: req.Command, Environment: req.Environment, WorkingDir: req.WorkingDir, User: req.User},
		split: req.SplitStderr, ws: map[string]*websocket.Conn{}, connected: make(chan struct{}),
	}
	p.mu.Lock()
	e.ch = p.newChange("exec")
	p.execs[e.ch.taskID] = e
	p.mu.Unlock()
	go p.run(e, fn)
	async202(w, e.ch.id, map[string]any{"task-id": e.ch.taskID})
}

func (p *Pebble) websocket(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("ws")
	p.mu.Lock()
	e := p.execs[r.PathValue("task")]
	p.mu.Unlock()
	if e == nil {
		errorResponse(w, http.StatusNotFound, "", "cannot find task with id %q", r.PathValue("task"))
		return
	}
	if name != "control" && name != "stdio" && name != "stderr" {
		errorResponse(w, http.StatusNotFound, "", "websocket %q does not exist", name)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ws[name] != nil {
		errorResponse(w, http.StatusBadRequest, "", "%s websocket already connected", name)
		return
	}
	conn, err := websocket.Upgrade(w, r)
	if err != nil {
		return
	}
	e.ws[name] = conn
	if e.ws["stdio"] != nil && (!e.split || e.ws["stderr"] != nil) {
		select {
		case <-e.connected:
		default:
			close(e.connected)
		}
	}
}

// run runs a command once its websockets are connected, streams its
// output and completes its change.
func (p *Pebble) run(e *pebbleExec, fn ExecFunc) {
	finish := func(code int, err error) {
		p.mu.Lock()
		e.ch.data["exit-code"] = code
		if err != nil {
			e.ch.err = err.Error()
		}
		delete(p.execs, e.ch.taskID)
		close(e.ch.ready)
		p.mu.Unlock()
	}
	select {
	case <-e.connected:
	case <-time.After(execConnectTimeout):
		finish(-1, errors.New("timeout waiting for websocket connections"))
		return
	}
	e.mu.Lock()
	stdio, stderr, control := e.ws["stdio"], e.ws["stderr"], e.ws["control"]
	e.mu.Unlock()
	for {
		typ, data, err := stdio.Read()
		if err != nil || typ == websocket.Close {
			break
		}
		if typ == websocket.Binary {
			e.req.Stdin = append(e.req.Stdin, data...)
			continue
		}
		var cmd struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(data, &cmd) == nil && cmd.Command == "end" {
			break
		}
	}
	res, err := fn(p, &e.req)
	if res == nil {
		res = &juju.ExecResult{}
	}
	out := res.Stdout
	if !e.split {
		out = append(slices.Clone(out), res.Stderr...)
	}
	send := func(c *websocket.Conn, data []byte) {
		if len(data) > 0 {
			c.Write(websocket.Binary, data)
		}
		c.Write(websocket.Text, []byte(`{"command":"end"}`))
	}
	send(stdio, out)
	if e.split {
		send(stderr, res.Stderr)
	}
	if control != nil {
		control.Close()
	}
	code := res.ExitCode
	if err != nil {
		code = -1
	}
	finish(code, err)
	stdio.Close()
	if stderr != nil {
		stderr.Close()
	}
}
