// Command opbus reads back what an opbus operator keeps per object.
//
// Install it with
//
//	go install github.com/opbus/opbus/cmd/opbus@latest
//
// Usage:
//
//	opbus explain -store DIR [-json] [-now TIME] KIND [NAMESPACE/]NAME
//
// explain prints, for the object of the key given, why each handler its
// stored record names did or did not run: its failure (attempts, next
// retry, error), its schedule, its slot, the object's pending states,
// incarnation and related objects. It reads the record of a FileStore
// directory (opbus.NewFileStore) and writes nothing. From a record alone it
// cannot know the handlers' kinds, types, On.When or fields, and says so;
// a running operator's Bus.Explain knows them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// usage is printed for a missing or unknown subcommand.
const usage = `usage:
  opbus explain -store DIR [-json] [-now TIME] KIND [NAMESPACE/]NAME
      why each handler of the object did or did not run, from its record
      in the FileStore directory DIR
`

// errUsage is a command line that cannot be used; the message is printed
// with the usage.
var errUsage = errors.New("opbus: bad usage")

// run runs the command line args and returns the exit status: 0 done, 1
// failed, 2 bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) == 0:
		err = fmt.Errorf("%w: expected a subcommand", errUsage)
	case args[0] == "explain":
		err = explainCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = fmt.Errorf("%w: unknown subcommand %q: expected explain", errUsage, args[0])
	}
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "%v\n%s", err, usage)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
