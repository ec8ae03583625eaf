package jujutest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/opbus/opbus/adapters/juju"
)

// Runner is a [juju.Runner] that runs hook tools in process against a
// [Model], one call at a time. It behaves as [juju.ExecRunner] does over
// the tools [InstallTools] builds: a tool that fails is a [*juju.ToolError]
// with Juju's exit code and message, and a tool the model does not
// implement is an error wrapping [juju.ErrToolNotFound].
//
// While tool calls may be running, the test reads and changes the model
// only through [Runner.Do].
type Runner struct {
	mu    sync.Mutex
	model *Model
}

var _ juju.Runner = (*Runner)(nil)

// NewRunner returns a Runner over m.
func NewRunner(m *Model) *Runner { return &Runner{model: m} }

// Run implements [juju.Runner]. It does not run the tool when ctx is
// already done.
func (r *Runner) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jujutest: %s: %w", name, err)
	}
	if !IsTool(name) {
		return nil, fmt.Errorf("%w: %q in the jujutest model", juju.ErrToolNotFound, name)
	}
	for i, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			// As exec refuses it: no process argument can hold a NUL.
			return nil, fmt.Errorf("jujutest: %s: argument %d holds a NUL byte, which exec refuses (invalid argument)", name, i+1)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	stdout, stderr, code := r.model.Exec(name, args, slices.Clone(stdin))
	if code != 0 {
		return nil, &juju.ToolError{Tool: name, Args: slices.Clone(args), ExitCode: code, Stderr: string(stderr)}
	}
	return stdout, nil
}

// Do calls fn with the model while no tool call runs.
func (r *Runner) Do(fn func(*Model)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.model)
}
