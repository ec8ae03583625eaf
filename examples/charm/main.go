// Command istio-gateway is a Juju charm, written with opbus, that deploys
// an istio gateway. Each concern is a separate handler with its own status
// slot, so no handler's Active hides another's Blocked:
//
//   - leadership: only the leader renders the gateway;
//   - config: the config item kind must be ingress or egress;
//   - istio-pilot: the istio-pilot relation must exist and the pilot must
//     have sent its service-name and service-port.
//
// When all is well, the istio-pilot handler renders the gateway's
// Kubernetes manifest to manifest.yaml in the charm directory (this
// example applies nothing to a cluster).
//
// This program is the charm's dispatch, which Juju runs for every hook;
// README.md says how to build and pack it.
package main

import (
	"errors"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
)

func main() { juju.Main(setup, nil) }

// setup registers the charm's handlers. Each subscribes to exactly what it
// reads, so it runs when that changes, and the adapter reads nothing else.
func setup(b *opbus.Bus) error {
	return errors.Join(
		b.Handle("leadership", leadership, opbus.On{Fields: []string{"leader"}}),
		b.Handle("config", config, opbus.On{Fields: []string{"config.kind"}}),
		b.Handle("istio-pilot", istioPilot, opbus.On{Fields: []string{"leader", "config.kind", "relations.istio-pilot"}}),
	)
}
