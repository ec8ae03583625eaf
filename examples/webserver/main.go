// Command webserver is a sidecar Juju charm, written with opbus, whose
// workload runs in its own container managed by Pebble:
//
//   - workload: once the workload container's Pebble can be reached
//     (containers.workload.can_connect), again whenever the container
//     restarts (a new containers.workload.boot_id, and the
//     workload-pebble-ready hook) and whenever the config changes,
//     it pushes the server's configuration file, reads Pebble's plan and,
//     when its service differs from the server's Pebble layer (whose
//     environment carries the file's digest), adds the layer and replans
//     (Pebble starts the server, or restarts it when its definition
//     changed), and
//     sets the workload version from the server's --version;
//   - health: on the pebble-check-failed and -recovered hooks, it reads
//     the check's status from Pebble.
//
// Juju runs the charm's dispatch script for every hook, which runs this
// program.
package main

import (
	"errors"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
)

func main() { juju.Main(setup, nil) }

// setup registers the charm's handlers.
func setup(b *opbus.Bus) error {
	return errors.Join(
		b.Handle("workload", workload, opbus.On{Fields: []string{"containers.workload", "config"}}),
		b.Handle("health", health, juju.OnHook("pebble-check-failed", "pebble-check-recovered")),
	)
}
