package juju

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/opbus/opbus/adapters/juju/internal/websocket"
)

// ExecOptions are the optional parts of a command [Container.Exec] runs.
type ExecOptions struct {
	// Environment holds the command's environment variables, besides
	// those Pebble sets.
	Environment map[string]string
	// WorkingDir is the directory it runs in; empty means Pebble's
	// default (the user's home directory).
	WorkingDir string
	// User and Group name whom it runs as; empty means Pebble's.
	User, Group string
	// Timeout, when not zero, has Pebble kill the command after it.
	Timeout time.Duration
	// Stdin is the command's standard input.
	Stdin []byte
}

// ExecResult is what a command run with [Container.Exec] did.
type ExecResult struct {
	// Stdout and Stderr are what it wrote.
	Stdout, Stderr []byte
	// ExitCode is its exit status: not zero is a result, not an error.
	ExitCode int
}

// Exec runs command (the program and its arguments, without a shell) in
// the container and returns its output and exit code once it exits. It is
// an error when the command could not run: the program is not found, the
// timeout killed it, Pebble cannot be reached. Output is collected in
// memory, so Exec suits commands that write little.
//
// Pebble streams the command's input and output over websockets of the
// exec task (/v1/tasks/<id>/websocket/{control,stdio,stderr}); Exec opens
// them over the socket, sends Stdin, and reads both outputs until Pebble
// ends them. Cancelling ctx closes the websockets and stops waiting; the
// command may run on until its Timeout.
//
// Exec waits at most the container's Timeout, plus the command's Timeout
// when it has one: a command that may run longer than the container's
// Timeout needs a Timeout of its own.
func (c *Container) Exec(ctx context.Context, command []string, opts *ExecOptions) (*ExecResult, error) {
	doing := "exec " + strings.Join(command, " ")
	if len(command) == 0 {
		return nil, c.wrap(errors.New("no command"), "exec")
	}
	if opts == nil {
		opts = &ExecOptions{}
	}
	bctx, cancel := bound(ctx, c.timeout()+max(opts.Timeout, 0))
	defer cancel()
	res, err := c.exec(bctx, command, opts)
	if err != nil {
		return nil, c.wrap(timedOut(bctx, err), doing)
	}
	return res, nil
}

// exec runs command; ctx, which has a deadline, bounds the whole run:
// each websocket's connection has its deadline.
func (c *Container) exec(ctx context.Context, command []string, opts *ExecOptions) (*ExecResult, error) {
	payload := map[string]any{"command": command, "split-stderr": true}
	if len(opts.Environment) > 0 {
		payload["environment"] = opts.Environment
	}
	if opts.WorkingDir != "" {
		payload["working-dir"] = opts.WorkingDir
	}
	if opts.User != "" {
		payload["user"] = opts.User
	}
	if opts.Group != "" {
		payload["group"] = opts.Group
	}
	if opts.Timeout != 0 {
		payload["timeout"] = opts.Timeout.String()
	}
	body, _ := json.Marshal(payload)
	var started struct {
		TaskID string `json:"task-id"`
	}
	changeID, err := c.do(ctx, "POST", "/v1/exec", nil, "application/json", bytes.NewReader(body), &started)
	if err != nil {
		return nil, err
	}
	if started.TaskID == "" || changeID == "" {
		return nil, errors.New("pebble returned no task or change for the command")
	}
	ws := map[string]*websocket.Conn{}
	defer func() {
		for _, conn := range ws {
			conn.Close()
		}
	}()
	for _, name := range []string{"control", "stdio", "stderr"} {
		conn, err := c.dial(ctx)
		if err != nil {
			return nil, err
		}
		if deadline, ok := ctx.Deadline(); ok {
			conn.SetDeadline(deadline)
		}
		w, err := websocket.Dial(conn, "localhost", "/v1/tasks/"+url.PathEscape(started.TaskID)+"/websocket/"+name)
		if err != nil {
			return nil, err
		}
		ws[name] = w
	}
	stop := context.AfterFunc(ctx, func() {
		for _, conn := range ws {
			conn.Close()
		}
	})
	defer stop()

	res := &ExecResult{}
	var wg sync.WaitGroup
	var readErrs [2]error
	wg.Go(func() { res.Stdout, readErrs[0] = readStream(ws["stdio"]) })
	wg.Go(func() { res.Stderr, readErrs[1] = readStream(ws["stderr"]) })
	if err := writeStream(ws["stdio"], opts.Stdin); err != nil {
		wg.Wait()
		return nil, fmt.Errorf("sending standard input: %w", err)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch, err := c.wait(ctx, changeID)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(readErrs[:]...); err != nil {
		return nil, fmt.Errorf("reading the output: %w", err)
	}
	if len(ch.Tasks) == 0 || ch.Tasks[0].Data["exit-code"] == nil {
		return nil, errors.New("pebble's change has no exit code")
	}
	if err := json.Unmarshal(ch.Tasks[0].Data["exit-code"], &res.ExitCode); err != nil {
		return nil, fmt.Errorf("exit code: %w", err)
	}
	return res, nil
}

// endCommand is the message that ends a stream in Pebble's exec protocol.
var endCommand = []byte(`{"command":"end"}`)

// writeStream sends data on a stream as one binary message, then the end
// of the stream.
func writeStream(w *websocket.Conn, data []byte) error {
	if len(data) > 0 {
		if err := w.Write(websocket.Binary, data); err != nil {
			return err
		}
	}
	return w.Write(websocket.Text, endCommand)
}

// readStream reads a stream's binary messages until its end message or
// the websocket's close.
func readStream(w *websocket.Conn) ([]byte, error) {
	out := []byte{}
	for {
		typ, data, err := w.Read()
		if errors.Is(err, io.EOF) {
			return out, nil // closed without a close message
		}
		if err != nil {
			return out, err
		}
		switch typ {
		case websocket.Binary:
			out = append(out, data...)
		case websocket.Close:
			return out, nil
		case websocket.Text:
			var cmd struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(data, &cmd) == nil && cmd.Command == "end" {
				return out, nil
			}
		}
	}
}
