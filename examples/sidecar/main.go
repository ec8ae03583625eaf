// Command sidecar is a sidecar Juju charm, written with opbus, for a small
// web app whose workload runs in its own container managed by Pebble. Its
// three handlers each keep their own status slot, so that one going
// active never hides another's problem:
//
//   - config checks the config option port (1 to 65535), Blocked naming
//     the bad value;
//   - workload, once the workload container's Pebble can be reached
//     (containers.workload.can_connect), again whenever the container
//     restarts (a new containers.workload.boot_id, and the
//     workload-pebble-ready hook, with none of what the charm gave the
//     last one) and whenever port changes, pushes the app's
//     configuration file, adds a Pebble layer with the app's one service
//     and replans; Waiting "Waiting for Pebble" until then;
//   - secret reads the password key of the user secret that the config
//     option password-secret names and pushes it into the container;
//     Blocked "Secret not granted" while the application may not read it.
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

// secretHooks are the hooks on which the secret handler reads the secret:
// when the option or the secret's content changes, and when the container
// comes up or restarts.
var secretHooks = []string{"config-changed", "secret-changed", "upgrade-charm", "pebble-ready"}

// notGrantedValue is the value the secret handler keeps while the
// application may not read the secret. A grant (juju grant-secret) fires
// no hook, so while it is set the handler reads the secret again at
// update-status; otherwise update-status leaves the handler, and the
// unit's state, alone.
const notGrantedValue = "secret-not-granted"

// onSecret is the secret handler's filter.
func onSecret() opbus.On {
	on := juju.OnHook(secretHooks...)
	changed, updateStatus := on.When, juju.OnHook("update-status").When
	on.When = func(ev *opbus.Event) bool {
		_, notGranted := ev.Value(notGrantedValue)
		return changed(ev) || notGranted && updateStatus(ev)
	}
	on.Fields = append(on.Fields, "config.password-secret", "containers.workload.can_connect")
	return on
}

// setup registers the charm's handlers.
func setup(b *opbus.Bus) error {
	return errors.Join(
		b.Handle("config", config, opbus.On{Fields: []string{"config.port"}}),
		b.Handle("workload", workload, opbus.On{Fields: []string{"containers.workload", "config.port"}}),
		b.Handle("secret", secret, onSecret()),
	)
}
