package jujutest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// tools maps each hook tool the model implements to its implementation.
var tools = map[string]func(m *Model, c *call) *result{
	"status-set":              (*Model).statusSet,
	"status-get":              (*Model).statusGet,
	"application-version-set": (*Model).applicationVersionSet,
	"juju-log":                (*Model).jujuLog,
	"is-leader":               (*Model).isLeader,
	"config-get":              (*Model).configGet,
	"state-get":               (*Model).stateGet,
	"state-set":               (*Model).stateSet,
	"state-delete":            (*Model).stateDelete,
	"relation-ids":            (*Model).relationIDs,
	"relation-list":           (*Model).relationList,
	"relation-get":            (*Model).relationGet,
	"relation-set":            (*Model).relationSet,
	"action-get":              (*Model).actionGet,
	"action-set":              (*Model).actionSet,
	"action-fail":             (*Model).actionFail,
	"action-log":              (*Model).actionLog,
	"secret-add":              (*Model).secretAdd,
	"secret-set":              (*Model).secretSet,
	"secret-get":              (*Model).secretGet,
	"secret-info-get":         (*Model).secretInfoGet,
	"secret-ids":              (*Model).secretIDs,
	"secret-grant":            (*Model).secretGrant,
	"secret-revoke":           (*Model).secretRevoke,
	"secret-remove":           (*Model).secretRemove,
	"add-metric":              (*Model).addMetric,
}

// ToolNames returns the names of the hook tools the model implements, in
// order.
func ToolNames() []string { return sortedKeys(tools) }

// IsTool reports whether the model implements the named hook tool.
func IsTool(name string) bool { _, ok := tools[name]; return ok }

// Exec runs one hook tool against the model, as Juju would run it for this
// unit, and returns what the tool prints and its exit code. It records the
// call in m.Calls, fails it if m.Failures names the tool, applies
// status-set, juju-log, application-version-set and the action tools at
// once, and stages state-set, state-delete and relation-set in m.Staged.
//
// Invalid use fails as Juju fails: exit code 2 for bad arguments (an
// unknown status word, a malformed or unknown relation id, an unknown
// flag), 1 for a refused operation (--application or --app on a
// non-leader, an over-long state key or value, an action tool outside an
// action), with "ERROR <message>" on stderr. An unknown tool exits 127.
//
// As Juju does, -r defaults to the hook's relation (Model.HookRelation);
// unlike Juju, which defaults other arguments from the hook context, the
// fake needs them explicitly: the endpoint for relation-ids and the unit
// or application for relation-get. Output formats
// are json and smart (the default); yaml is written as JSON, which YAML
// reads.
func (m *Model) Exec(name string, args []string, stdin []byte) (stdout, stderr []byte, exitCode int) {
	m.Calls = append(m.Calls, Call{Name: name, Args: slices.Clone(args)})
	last := &m.Calls[len(m.Calls)-1]
	fn, ok := tools[name]
	if !ok {
		last.Exit = 127
		return nil, fmt.Appendf(nil, "ERROR unknown hook tool %q\n", name), 127
	}
	if m.Restricted != "" && !allowedIn(m.Restricted, name) {
		last.Exit = 1
		return nil, []byte("ERROR not implemented for restricted context not implemented\n"), 1
	}
	if msg, found := m.Failures[name]; found {
		last.Exit = 1
		return nil, []byte("ERROR " + msg + "\n"), 1
	}
	r := fn(m, &call{args: args, stdin: stdin})
	if r == nil {
		r = &result{}
	}
	last.Exit = r.code
	var errOut []byte
	if r.err != "" {
		errOut = []byte("ERROR " + r.err + "\n")
	}
	return r.out, errOut, r.code
}

// call is one tool invocation being parsed.
type call struct {
	args  []string
	stdin []byte
	// Set by parse:
	values map[string]string // value flags given, by long name
	bools  map[string]bool   // bool flags given, by long name
	pos    []string          // positional arguments
}

// result is what a tool returns: output, error message and exit code. A
// nil *result is success with no output.
type result struct {
	out  []byte
	err  string
	code int
}

// usage is a failure in parsing or checking arguments (exit code 2).
func usage(format string, a ...any) *result {
	return &result{err: fmt.Sprintf(format, a...), code: 2}
}

// fail is a failure in running the tool (exit code 1).
func fail(format string, a ...any) *result {
	return &result{err: fmt.Sprintf(format, a...), code: 1}
}

// flagSet declares a tool's flags: long names, whether each takes a
// value, and short aliases.
type flagSet struct {
	values []string          // flags that take a value
	bools  []string          // boolean flags
	alias  map[string]string // short name → long name
}

// parse splits c.args into flags and positional arguments the way Juju's
// hook tools do: flags may come anywhere, "--" ends them, "-" alone is
// positional, and a value follows "=" or comes as the next argument.
func (c *call) parse(fs flagSet) *result {
	c.values, c.bools = map[string]string{}, map[string]bool{}
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a == "--" {
			c.pos = append(c.pos, c.args[i+1:]...)
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			c.pos = append(c.pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if long, ok := fs.alias[name]; ok {
			name = long
		}
		switch {
		case slices.Contains(fs.values, name):
			if !hasValue {
				if i+1 == len(c.args) {
					return usage("flag needs an argument: %s", a)
				}
				i++
				value = c.args[i]
			}
			c.values[name] = value
		case slices.Contains(fs.bools, name):
			b := true
			if hasValue {
				var err error
				if b, err = strconv.ParseBool(value); err != nil {
					return usage("invalid boolean value %q for flag %s", value, a)
				}
			}
			c.bools[name] = b
		default:
			return usage("flag provided but not defined: %s", a)
		}
	}
	return nil
}

// withFormat adds the --format flag that every tool printing data has.
func withFormat(fs flagSet) flagSet {
	fs.values = append(slices.Clone(fs.values), "format")
	return fs
}

// relationFlags are the flags of the relation tools.
func relationFlags(values, bools []string) flagSet {
	return flagSet{
		values: append([]string{"relation"}, values...),
		bools:  bools,
		alias:  map[string]string{"r": "relation"},
	}
}

// relation resolves the -r flag, which takes "7" or "db:7" and defaults
// to the hook's relation (Model.HookRelation).
func (m *Model) relation(c *call) (*Relation, *result) {
	v, given := c.values["relation"]
	if !given && m.HookRelation != nil {
		v, given = strconv.Itoa(*m.HookRelation), true
	}
	if !given {
		return nil, usage("no relation id specified")
	}
	s := v
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[i+1:]
	}
	id, err := strconv.Atoi(s)
	if err != nil {
		return nil, usage("invalid value %q for option -r: invalid relation id", v)
	}
	r := m.Relation(id)
	if r == nil || r.Dead || (strings.Contains(v, ":") && !strings.HasPrefix(v, r.Endpoint+":")) {
		return nil, usage("invalid value %q for option -r: relation not found", v)
	}
	return r, nil
}

// noMore fails when positional arguments are left over.
func noMore(rest []string) *result {
	if len(rest) > 0 {
		return usage("unrecognized args: %q", rest)
	}
	return nil
}

// output formats v as the --format flag asks: json, smart (the default,
// which prints strings bare and booleans as True/False) or yaml (written as
// JSON, which is valid YAML).
func output(c *call, v any) *result {
	format := c.values["format"]
	if format == "" {
		format = "smart"
	}
	var b []byte
	switch format {
	case "json", "yaml":
		var err error
		if b, err = json.Marshal(v); err != nil {
			return fail("cannot format output: %v", err)
		}
	case "smart":
		switch v := v.(type) {
		case nil:
			return nil
		case string:
			b = []byte(v)
		case bool:
			b = []byte("False")
			if v {
				b = []byte("True")
			}
		default:
			var err error
			if b, err = json.Marshal(v); err != nil {
				return fail("cannot format output: %v", err)
			}
		}
	default:
		return usage("invalid value %q for option --format: unknown format %q", format, format)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return &result{out: b}
}

// keyValues parses "key=value" arguments, failing on a missing "=" or a
// duplicate key, as Juju does for state-set and relation-set.
func keyValues(args []string) (map[string]string, *result) {
	kv := map[string]string{}
	for _, a := range args {
		k, v, found := strings.Cut(a, "=")
		if !found || k == "" {
			return nil, usage("expected \"key=value\", got %q", a)
		}
		if _, dup := kv[k]; dup {
			return nil, usage("key %q specified more than once", k)
		}
		kv[k] = v
	}
	return kv, nil
}

// settingsInput reads the --file flag's settings ("-" is stdin) and
// overrides them with the key=value arguments, as Juju does.
func settingsInput(c *call) (map[string]string, *result) {
	args, bad := keyValues(c.pos)
	if bad != nil {
		return nil, bad
	}
	settings := map[string]string{}
	if path, given := c.values["file"]; given {
		data := c.stdin
		if path != "-" {
			var err error
			if data, err = os.ReadFile(path); err != nil {
				return nil, fail("%v", err)
			}
		}
		var err error
		if settings, err = parseSettings(data); err != nil {
			return nil, fail("cannot parse settings: %v", err)
		}
	}
	maps.Copy(settings, args)
	return settings, nil
}
