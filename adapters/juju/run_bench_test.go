package juju_test

import (
	"context"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// BenchmarkRun measures the adapter's own work in one hook, in process:
// reading the environment, a new bus, planning and building the document,
// dispatching it to three handlers, and publishing, with the hook tools
// answered by the in-memory model (microseconds each). A charm run by Juju
// adds process start-up and the tools' own cost; examples/charm's
// BenchmarkHook measures those.
//
//   - steady: nothing changed since the last hook; no handler runs.
//   - changed: a config value changed; two handlers run, the record is
//     stored.
func BenchmarkRun(b *testing.B) {
	c := charm(
		handler{"leadership", returns(opbus.Active("")), opbus.On{Fields: []string{"leader"}}},
		handler{"config", returns(opbus.Active("")), opbus.On{Fields: []string{"config.port"}}},
		handler{"db", returns(opbus.Active("")), opbus.On{Fields: []string{"leader", "config.port", "relations.db"}}},
	)
	settled, err := c.Run(context.Background(), "install", newModel())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		port float64
	}{{"steady", 8080}, {"changed", 9090}} {
		b.Run(bc.name, func(b *testing.B) {
			env := map[string]string{"JUJU_DISPATCH_PATH": "hooks/config-changed", "JUJU_UNIT_NAME": "web/0"}
			opts := &juju.Options{Getenv: func(k string) string { return env[k] }, Endpoints: endpoints.Endpoints}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				m := *settled
				m.Calls = nil
				m.Config = map[string]any{"port": bc.port}
				opts.Runner = jujutest.NewRunner(&m)
				b.StartTimer()
				if err := juju.Run(context.Background(), c.Setup, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
