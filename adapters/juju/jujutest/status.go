package jujutest

import (
	"slices"
	"strings"

	"github.com/opbus/opbus/adapters/juju"
)

// The status words status-set accepts, in the order Juju lists them.
var settableStatus = []string{juju.StatusMaintenance, juju.StatusBlocked, juju.StatusWaiting, juju.StatusActive}

// status-set [--application] <maintenance|blocked|waiting|active> [message]
func (m *Model) statusSet(c *call) *result {
	if bad := c.parse(flagSet{bools: []string{"application"}}); bad != nil {
		return bad
	}
	if len(c.pos) < 1 {
		return usage("invalid args, require <status> [message]")
	}
	if !slices.Contains(settableStatus, c.pos[0]) {
		return usage("invalid status %q, expected one of [%s]", c.pos[0], strings.Join(settableStatus, " "))
	}
	st := Status{Status: c.pos[0]}
	if len(c.pos) > 1 {
		st.Message = c.pos[1]
	}
	if bad := noMore(c.pos[min(len(c.pos), 2):]); bad != nil {
		return bad
	}
	if c.bools["application"] {
		if !m.Leader {
			return fail("setting application status: this unit is not the leader")
		}
		m.AppStatus = st
		m.AppStatusHistory = append(m.AppStatusHistory, st)
		return nil
	}
	m.UnitStatus = st
	m.UnitStatusHistory = append(m.UnitStatusHistory, st)
	return nil
}

// status-get [--include-data] [--application] [--format=…]
func (m *Model) statusGet(c *call) *result {
	if bad := c.parse(withFormat(flagSet{bools: []string{"include-data", "application"}})); bad != nil {
		return bad
	}
	if bad := noMore(c.pos); bad != nil {
		return bad
	}
	withData := c.bools["include-data"]
	plain := !withData && (c.values["format"] == "" || c.values["format"] == "smart")
	if c.bools["application"] {
		if !m.Leader {
			return fail("finding application status: this unit is not the leader")
		}
		if plain {
			return output(c, orUnknown(m.AppStatus).Status)
		}
		app := statusDetails(m.AppStatus, withData)
		app["units"] = map[string]any{m.Unit: statusDetails(m.UnitStatus, withData)}
		return output(c, map[string]any{"application-status": app})
	}
	if plain {
		return output(c, orUnknown(m.UnitStatus).Status)
	}
	return output(c, statusDetails(m.UnitStatus, withData))
}

// statusDetails is a status as status-get prints it.
func statusDetails(st Status, withData bool) map[string]any {
	st = orUnknown(st)
	d := map[string]any{"status": st.Status}
	if withData {
		d["message"] = st.Message
		d["status-data"] = map[string]any{}
	}
	return d
}

// orUnknown returns st, or "unknown" for a status never set.
func orUnknown(st Status) Status {
	if st.Status == "" {
		st.Status = juju.StatusUnknown
	}
	return st
}

// application-version-set <version>
func (m *Model) applicationVersionSet(c *call) *result {
	if bad := c.parse(flagSet{}); bad != nil {
		return bad
	}
	if len(c.pos) < 1 {
		return usage("no version specified")
	}
	if bad := noMore(c.pos[1:]); bad != nil {
		return bad
	}
	m.WorkloadVersion = c.pos[0]
	return nil
}

// logLevels are the levels juju-log accepts (case-insensitively), by the
// name it records them under.
var logLevels = map[string]string{
	"TRACE": juju.LogTrace, "DEBUG": juju.LogDebug, "INFO": juju.LogInfo,
	"WARNING": juju.LogWarning, "WARN": juju.LogWarning, "ERROR": juju.LogError,
	"CRITICAL": "CRITICAL",
}

// juju-log [--debug] [-l|--log-level <level>] <message…>
func (m *Model) jujuLog(c *call) *result {
	fs := flagSet{values: []string{"log-level", "format"}, bools: []string{"debug"}, alias: map[string]string{"l": "log-level"}}
	if bad := c.parse(fs); bad != nil {
		return bad
	}
	if len(c.pos) == 0 {
		return usage("no message specified")
	}
	level := juju.LogInfo
	switch v := c.values["log-level"]; {
	case c.bools["debug"]:
		level = juju.LogDebug
	case v != "":
		if l, ok := logLevels[strings.ToUpper(v)]; ok {
			level = l
		} else {
			// Juju logs a warning and the message at INFO.
			m.Logs = append(m.Logs, LogLine{Level: juju.LogWarning, Message: "Specified log level of \"" + v + "\" is not valid"})
		}
	}
	m.Logs = append(m.Logs, LogLine{Level: level, Message: strings.Join(c.pos, " ")})
	return nil
}

// is-leader [--format=…]
func (m *Model) isLeader(c *call) *result {
	if bad := c.parse(withFormat(flagSet{})); bad != nil {
		return bad
	}
	if bad := noMore(c.pos); bad != nil {
		return bad
	}
	return output(c, m.Leader)
}

// config-get [--all] [--format=…] [key]
func (m *Model) configGet(c *call) *result {
	if bad := c.parse(withFormat(flagSet{bools: []string{"all", "a"}})); bad != nil {
		return bad
	}
	cfg := m.config(c.bools["all"] || c.bools["a"])
	if len(c.pos) == 0 {
		return output(c, cfg)
	}
	if bad := noMore(c.pos[1:]); bad != nil {
		return bad
	}
	return output(c, cfg[c.pos[0]])
}

// config returns the configuration as config-get prints it: Model.Config
// over the defaults of the charm's options, when the charm is known; with
// all, the options with neither a value nor a default too, as null.
func (m *Model) config(all bool) map[string]any {
	cfg := map[string]any{}
	if m.charm != nil {
		for name, o := range m.charm.Options {
			if o.Default != nil || all {
				cfg[name] = o.Default
			}
		}
	}
	for k, v := range m.Config {
		cfg[k] = v
	}
	return cfg
}
