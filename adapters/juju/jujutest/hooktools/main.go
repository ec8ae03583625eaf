// Command hooktools is a fake of Juju's hook tools for process-level charm
// tests. It is one program for every tool: run through a symlink named
// after the tool (status-set, relation-get, …) or as "hooktools <tool>
// args…", it runs the tool against the jujutest model in the JSON file
// named by OPBUS_JUJU_MODEL, saves the model and exits with the tool's exit
// code. jujutest.InstallTools builds it and makes the symlinks.
package main

import (
	"os"

	"github.com/opbus/opbus/adapters/juju/jujutest"
)

func main() {
	os.Exit(jujutest.ToolMain(os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
