package jujutest

import (
	"maps"

	"github.com/opbus/opbus/adapters/juju"
)

// state-get [--strict] [--format=…] [key|-]
func (m *Model) stateGet(c *call) *result {
	if bad := c.parse(withFormat(flagSet{bools: []string{"strict"}})); bad != nil {
		return bad
	}
	key := ""
	if len(c.pos) > 0 {
		if key = c.pos[0]; key == "-" {
			key = ""
		}
		if bad := noMore(c.pos[1:]); bad != nil {
			return bad
		}
	}
	state := m.state()
	if key == "" {
		return output(c, nonNil(state))
	}
	v, found := state[key]
	if !found && c.bools["strict"] {
		return fail("%q not found", key)
	}
	return output(c, v)
}

// state-set [--file <path|->] [key=value …]
func (m *Model) stateSet(c *call) *result {
	if bad := c.parse(flagSet{values: []string{"file"}}); bad != nil {
		return bad
	}
	settings, bad := settingsInput(c)
	if bad != nil {
		return bad
	}
	for _, k := range sortedKeys(settings) {
		if len(k) > juju.MaxStateKey {
			return fail("max allowed key length (%d) exceeded by key %.40q…", juju.MaxStateKey, k)
		}
		if len(settings[k]) > juju.MaxStateValue {
			return fail("max allowed value length (%d) exceeded for key %q", juju.MaxStateValue, k)
		}
	}
	if len(settings) == 0 {
		return nil
	}
	next := maps.Clone(nonNil(m.state()))
	maps.Copy(next, settings)
	m.staged().State = next
	return nil
}

// state-delete <key>
func (m *Model) stateDelete(c *call) *result {
	if bad := c.parse(flagSet{}); bad != nil {
		return bad
	}
	if len(c.pos) != 1 {
		return usage("specify one key to delete")
	}
	next := maps.Clone(nonNil(m.state()))
	delete(next, c.pos[0])
	m.staged().State = next
	return nil
}

// nonNil returns m, or an empty map for nil.
func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
