// Command kubectl-opbus reads back what an opbus operator keeps on a
// Kubernetes object. Installed on the PATH under this name, it is the
// kubectl plugin "kubectl opbus":
//
//	go install github.com/opbus/opbus/adapters/k8s/cmd/kubectl-opbus@latest
//	kubectl opbus explain widgets.example.com my-widget -n shop
//
// Usage:
//
//	kubectl opbus explain [flags] RESOURCE NAME
//
// RESOURCE is a resource or kind as kubectl takes it ("pods", "pod",
// "deployments.apps", "Widget.example.com"). explain gets the object
// through the kubeconfig, reads the record the operator keeps in its
// annotation (opbus.dev/record, or N.opbus.dev/record for --operator N)
// and prints why each handler the record names did or did not run: its
// failure (attempts, next retry, error), schedule and slot, the object's
// incarnation and related objects. It writes nothing. From a record alone
// it cannot know the handlers' kinds, types, On.When or fields, and says
// so; a running operator serves the full explanation on its metrics
// server (k8s.Flags.ServeExplain).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(context.Background(), filepath.Base(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks a command line that cannot be used; exit status 2.
var errUsage = errors.New("bad usage")

// run runs the command line args of the program called name and returns
// the exit status: 0 done, 1 failed, 2 bad usage.
func run(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	prog := "kubectl-opbus"
	if name == "kubectl-opbus" {
		prog = "kubectl opbus" // as kubectl runs its plugins
	}
	var err error
	switch {
	case len(args) == 0:
		err = fmt.Errorf("%w: expected a subcommand", errUsage)
	case args[0] == "explain":
		err = explainCmd(ctx, prog, args[1:], stdout, stderr)
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		fmt.Fprint(stdout, usage(prog))
		return 0
	default:
		err = fmt.Errorf("%w: unknown subcommand %q: expected explain", errUsage, args[0])
	}
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "%s: %v\n%s", prog, err, usage(prog))
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 1
	}
	return 0
}

func usage(prog string) string {
	return strings.ReplaceAll(`usage:
  PROG explain [--kubeconfig PATH] [--context NAME] [-n NAMESPACE] [--operator NAME] [--json] RESOURCE NAME
      why each handler of the object did or did not run, from the record
      its operator keeps on it
`, "PROG", prog)
}
