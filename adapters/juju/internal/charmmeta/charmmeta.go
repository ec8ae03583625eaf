// Package charmmeta reads what a charm declares about its config options
// and actions, with their types, defaults and parameter schemas, from the
// charm directory: config.yaml (or config.options in charmcraft.yaml) and
// actions.yaml (or actions in charmcraft.yaml), as Juju reads them.
package charmmeta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opbus/opbus/adapters/juju/internal/charmyaml"
)

// Option is one config option.
type Option struct {
	// Type is its type: string, int, float, boolean or secret.
	Type string
	// Default is its default, as config-get prints it (int64 for an int);
	// nil when it has none.
	Default any
}

// Action is one action.
type Action struct {
	// Schema is the JSON schema of its parameters, as Juju makes it: an
	// object whose properties are the action's params, with its required
	// and additionalProperties.
	Schema map[string]any
}

// Charm is what a charm directory declares.
type Charm struct {
	// Options are the config options, by name; nil when the charm
	// declares none.
	Options map[string]Option
	// Actions are the actions, by name; nil when the charm declares none.
	Actions map[string]Action
}

// Read reads the charm directory dir. A directory holding none of
// metadata.yaml, charmcraft.yaml, config.yaml and actions.yaml is an
// error wrapping fs.ErrNotExist.
func Read(dir string) (*Charm, error) {
	files := map[string]map[string]any{}
	if _, err := os.Stat(filepath.Join(dir, "metadata.yaml")); err == nil {
		files["metadata.yaml"] = nil // declares neither options nor actions: not read
	}
	for _, name := range []string{"charmcraft.yaml", "config.yaml", "actions.yaml"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		v, err := charmyaml.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, fmt.Errorf("%s: not a mapping", path)
		}
		if m == nil {
			m = map[string]any{}
		}
		files[name] = m
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no metadata.yaml, charmcraft.yaml, config.yaml or actions.yaml: %w", dir, fs.ErrNotExist)
	}
	c := &Charm{}
	options, where := files["config.yaml"]["options"], "config.yaml: options"
	if _, ok := files["config.yaml"]; !ok {
		cfg, _ := files["charmcraft.yaml"]["config"].(map[string]any)
		options, where = cfg["options"], "charmcraft.yaml: config.options"
	}
	if options != nil {
		m, ok := options.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not a mapping", where)
		}
		c.Options = map[string]Option{}
		for name, o := range m {
			spec, _ := o.(map[string]any)
			typ, _ := spec["type"].(string)
			if typ == "" {
				typ = "string"
			}
			c.Options[name] = Option{Type: typ, Default: spec["default"]}
		}
	}
	actions, where := any(files["actions.yaml"]), "actions.yaml"
	if _, ok := files["actions.yaml"]; !ok {
		actions, where = files["charmcraft.yaml"]["actions"], "charmcraft.yaml: actions"
	}
	if actions != nil {
		m, ok := actions.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not a mapping", where)
		}
		c.Actions = map[string]Action{}
		for name, a := range m {
			spec, _ := a.(map[string]any)
			schema := map[string]any{"type": "object", "properties": map[string]any{}}
			if p, ok := spec["params"].(map[string]any); ok {
				schema["properties"] = p
			}
			for _, k := range []string{"required", "additionalProperties"} {
				if v, ok := spec[k]; ok {
					schema[k] = v
				}
			}
			c.Actions[name] = Action{Schema: schema}
		}
	}
	return c, nil
}

// Action returns the named action, and whether c declares it; a nil c
// declares none.
func (c *Charm) Action(name string) (Action, bool) {
	if c == nil {
		return Action{}, false
	}
	a, ok := c.Actions[name]
	return a, ok
}
