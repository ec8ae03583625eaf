// Command opbus reads back what an opbus operator keeps per object.
//
// Install it with
//
//	go install github.com/opbus/opbus/cmd/opbus@latest
//
// Usage:
//
//	opbus explain -store DIR [-json] [-now TIME] KIND [NAMESPACE/]NAME
//	opbus explain -juju-state FILE [-json] [-now TIME] [KIND NAME]
//
// explain prints, for the object of the key given, why each handler its
// stored record names did or did not run: its failure (attempts, next
// retry, error), its schedule, its slot, the object's pending states,
// incarnation and related objects. It reads the record of a FileStore
// directory (opbus.NewFileStore) and writes nothing. From a record alone it
// cannot know the handlers' kinds, types, On.When or fields, and says so;
// a running operator's Bus.Explain knows them.
//
// With -juju-state it reads instead the records of a Juju unit, as the
// state-get hook tool prints the charm's state key (juju.DefaultStateKey,
// "opbus"), through juju exec or juju ssh:
//
//	juju exec --unit app/0 -- state-get opbus | opbus explain -juju-state -
//
// and explains the unit's and its application's records, or the one of
// KIND NAME ("unit app/0", "application app").
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usage is printed for a missing or unknown subcommand.
const usage = `usage:
  opbus explain -store DIR [-json] [-now TIME] KIND [NAMESPACE/]NAME
      why each handler of the object did or did not run, from its record
      in the FileStore directory DIR
  opbus explain -juju-state FILE [-json] [-now TIME] [KIND NAME]
      the same for the records of a Juju unit, from what state-get prints
      for the charm's state key (FILE "-" reads standard input), e.g.
      juju exec --unit app/0 -- state-get opbus | opbus explain -juju-state -
`

// errUsage is a command line that cannot be used; the message is printed
// with the usage.
var errUsage = errors.New("opbus: bad usage")

// run runs the command line args and returns the exit status: 0 done, 1
// failed, 2 bad usage.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) == 0:
		err = fmt.Errorf("%w: expected a subcommand", errUsage)
	case args[0] == "explain":
		err = explainCmd(ctx, args[1:], stdin, stdout, stderr)
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
