package jujutest

import (
	"regexp"
	"slices"
	"strings"
)

// errNoAction is the failure of an action tool outside an action.
const errNoAction = "not running an action"

// action-get [--format=…] [key[.key…]]
func (m *Model) actionGet(c *call) *result {
	if bad := c.parse(withFormat(flagSet{})); bad != nil {
		return bad
	}
	if m.Action == nil {
		return fail(errNoAction)
	}
	params := m.Action.Params
	if a, ok := m.charm.Action(m.Action.Name); ok {
		params = a.Defaults(params)
	}
	if params == nil {
		params = map[string]any{}
	}
	if len(c.pos) == 0 {
		return output(c, params)
	}
	if bad := noMore(c.pos[1:]); bad != nil {
		return bad
	}
	var v any = params
	for k := range strings.SplitSeq(c.pos[0], ".") {
		sub, isMap := v.(map[string]any)
		if !isMap {
			return output(c, nil)
		}
		v = sub[k]
	}
	return output(c, v)
}

// actionKeyPart is Juju's rule for one dot-separated part of an action-set
// key; reservedActionKeys are the parts Juju keeps for itself.
var (
	actionKeyPart      = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)
	reservedActionKeys = []string{"stdout", "stdout-encoding", "stderr", "stderr-encoding"}
)

// action-set key=value …
func (m *Model) actionSet(c *call) *result {
	if bad := c.parse(flagSet{}); bad != nil {
		return bad
	}
	type pair struct {
		path  []string
		value string
	}
	var pairs []pair
	for _, a := range c.pos {
		k, v, found := strings.Cut(a, "=")
		if !found {
			return usage("argument %q must be of the form key...=value", a)
		}
		path := strings.Split(k, ".")
		for _, part := range path {
			if !actionKeyPart.MatchString(part) {
				return usage("key %q must start and end with lowercase alphanumeric, and contain only lowercase alphanumeric, hyphens and periods", part)
			}
			if slices.Contains(reservedActionKeys, part) {
				return usage("cannot set reserved action key %q", part)
			}
		}
		pairs = append(pairs, pair{path, v})
	}
	if m.Action == nil {
		return fail(errNoAction)
	}
	if m.Action.Results == nil {
		m.Action.Results = map[string]any{}
	}
	for _, p := range pairs {
		setNested(m.Action.Results, p.path, p.value)
	}
	return nil
}

// setNested sets path in m to v, making maps on the way and replacing a
// value that is in the way, as Juju does.
func setNested(m map[string]any, path []string, v string) {
	for _, k := range path[:len(path)-1] {
		next, isMap := m[k].(map[string]any)
		if !isMap {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// action-fail [message]
func (m *Model) actionFail(c *call) *result {
	if bad := c.parse(flagSet{}); bad != nil {
		return bad
	}
	msg := "action failed without reason given, check action for errors"
	if len(c.pos) > 0 {
		msg = c.pos[0]
		if bad := noMore(c.pos[1:]); bad != nil {
			return bad
		}
	}
	if m.Action == nil {
		return fail(errNoAction)
	}
	m.Action.Failed = true
	m.Action.FailMessage = msg
	return nil
}

// action-log <message…>
func (m *Model) actionLog(c *call) *result {
	if bad := c.parse(flagSet{}); bad != nil {
		return bad
	}
	if len(c.pos) == 0 {
		return usage("no message specified")
	}
	if m.Action == nil {
		return fail(errNoAction)
	}
	m.Action.Logs = append(m.Action.Logs, strings.Join(c.pos, " "))
	return nil
}
