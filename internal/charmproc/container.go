package charmproc

import (
	"encoding/json"
	"testing"

	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// Container is a unit's workload container between hooks: its fake
// Pebble, nil while the container is down, listening in Dir (give it to
// the charm as OPBUS_PEBBLE_DIR or [jujutest.Harness].PebbleDir).
type Container struct {
	T    testing.TB
	Dir  string
	Name string
	// Exec, if not nil, runs the commands the charm runs in the container.
	Exec   jujutest.ExecFunc
	Pebble *jujutest.Pebble
}

// NewContainer returns the container name, down, with its Pebble
// directory made for the test.
func NewContainer(t testing.TB, name string) *Container {
	return &Container{T: t, Dir: jujutest.PebbleDir(t), Name: name}
}

// Up starts the container's Pebble: a new fake, empty as a container
// fresh from its image.
func (c *Container) Up() {
	if c.Pebble == nil {
		c.Pebble = jujutest.StartPebble(c.T, c.Dir, c.Name)
		if c.Exec != nil {
			c.Pebble.SetExec(c.Exec)
		}
	}
}

// Down stops the container's Pebble.
func (c *Container) Down() {
	if c.Pebble != nil {
		c.Pebble.Close()
		c.Pebble = nil
	}
}

// Restart restarts the container (it must be up): its Pebble answers
// again with a new boot ID and nothing the charm gave it.
func (c *Container) Restart() { c.Pebble.Restart() }

// CheckServing checks that the container runs service alone, active,
// started starts times, configured by the JSON file conf whose "port" is
// port.
func (c *Container) CheckServing(t testing.TB, conf, service string, port, starts int) {
	t.Helper()
	data, ok := c.Pebble.File(conf)
	var cf struct{ Port int }
	if !ok || json.Unmarshal(data, &cf) != nil || cf.Port != port {
		t.Errorf("%s: got %q (exists: %v), want port %d", conf, data, ok, port)
	}
	svcs := c.Pebble.Services()
	if len(svcs) != 1 || svcs[0].Name != service || svcs[0].Current != "active" {
		t.Errorf("services: got %+v, want %s active", svcs, service)
	}
	if got := c.Pebble.Starts(service); got != starts {
		t.Errorf("%s started %d times, want %d", service, got, starts)
	}
}
