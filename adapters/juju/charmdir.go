package juju

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// charmFiles are the files whose presence marks a charm directory.
var charmFiles = []string{"metadata.yaml", "charmcraft.yaml"}

// findCharmDir returns the charm directory: JUJU_CHARM_DIR, which Juju
// sets for every hook and action, or else the first of the working
// directory (Juju runs hooks there), the program's directory and its
// parent (a charm's binary is often bin/<name>), and the same for the
// executable with its links resolved, that holds metadata.yaml or
// charmcraft.yaml. It returns "" when none does.
func findCharmDir(env *Env, program string) string {
	if env.CharmDir != "" {
		return env.CharmDir
	}
	var candidates []string
	if wd, err := os.Getwd(); err == nil {
		candidates = append(candidates, wd)
	}
	if program != "" && strings.ContainsRune(program, filepath.Separator) {
		if abs, err := filepath.Abs(program); err == nil {
			candidates = append(candidates, filepath.Dir(abs), filepath.Dir(filepath.Dir(abs)))
		}
	}
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Dir(exe), filepath.Dir(filepath.Dir(exe)))
	}
	for _, dir := range candidates {
		for _, name := range charmFiles {
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
				return dir
			}
		}
	}
	return ""
}

// readConfigOptions returns the names of the charm's config options,
// sorted: the keys under options in config.yaml in dir or, without one,
// under config.options in charmcraft.yaml. A charm directory with neither
// but with metadata.yaml declares no options (nil error, empty list). It
// is an error wrapping [fs.ErrNotExist] when dir holds none of these files.
func readConfigOptions(dir string) ([]string, error) {
	sources := []struct {
		name string
		path []string
	}{{"config.yaml", []string{"options"}}, {"charmcraft.yaml", []string{"config", "options"}}}
	var errs []error
	for _, src := range sources {
		path := filepath.Join(dir, src.name)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("juju: reading config options: %w", err)
		}
		keys, found, err := keysUnder(string(data), src.path)
		if err != nil {
			return nil, fmt.Errorf("juju: reading config options from %s: %w", path, err)
		}
		if found || src.name == "config.yaml" {
			return append([]string{}, keys...), nil
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "metadata.yaml")); err == nil {
		return []string{}, nil
	} else if _, cerr := os.Stat(filepath.Join(dir, "charmcraft.yaml")); cerr == nil {
		return []string{}, nil
	}
	return nil, fmt.Errorf("juju: reading config options: %w", errors.Join(errs...))
}

// keysUnder lists, sorted, the keys one level under the key path of a
// block-style YAML document, and reports whether the document holds that
// key. A key of the path given in flow style other than "{}" is an error
// rather than a silent miss. Block scalars (| and >) are skipped.
func keysUnder(doc string, path []string) (keys []string, found bool, err error) {
	type level struct {
		indent int
		key    string
	}
	var stack []level
	scalar := -1 // indentation of a key whose block scalar is being skipped
	for n, raw := range strings.Split(doc, "\n") {
		line := strings.TrimRight(stripComment(raw), " \t\r")
		if strings.TrimSpace(line) == "" || line == "---" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if scalar >= 0 {
			if indent > scalar {
				continue
			}
			scalar = -1
		}
		if strings.HasPrefix(line[indent:], "\t") {
			return nil, false, fmt.Errorf("line %d: tab indentation", n+1)
		}
		if strings.HasPrefix(line[indent:], "-") {
			continue // a list item: no key of a map
		}
		key, value, kerr := splitKey(line[indent:])
		if kerr != nil {
			continue // a continuation of a plain scalar
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		at := make([]string, len(stack))
		for i, l := range stack {
			at[i] = l.key
		}
		if slices.Equal(at, path) && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
		at = append(at, key)
		if slices.Equal(at, path) {
			found = true
			if value != "" && value != "{}" {
				return nil, false, fmt.Errorf("line %d: %s: %q: write its keys one per line", n+1, strings.Join(path, "."), value)
			}
		}
		if strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">") {
			scalar = indent
		}
		stack = append(stack, level{indent, key})
	}
	slices.Sort(keys)
	return keys, found, nil
}

// readActionParams returns the names of the parameters of the charm's
// actions, all actions together, sorted: the keys under <action>.params in
// actions.yaml in dir or, without one, under actions.<action>.params in
// charmcraft.yaml. A charm directory with neither declares no actions (nil
// error, empty list). It is an error wrapping [fs.ErrNotExist] when dir
// holds none of actions.yaml, charmcraft.yaml and metadata.yaml.
func readActionParams(dir string) ([]string, error) {
	sources := []struct {
		name string
		path []string // where the actions are
	}{{"actions.yaml", nil}, {"charmcraft.yaml", []string{"actions"}}}
	var errs []error
	for _, src := range sources {
		path := filepath.Join(dir, src.name)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("juju: reading action parameters: %w", err)
		}
		actions, found, err := keysUnder(string(data), src.path)
		if err != nil {
			return nil, fmt.Errorf("juju: reading action parameters from %s: %w", path, err)
		}
		if !found && src.path != nil {
			continue // a charmcraft.yaml without actions
		}
		params := []string{}
		for _, a := range actions {
			ps, _, err := keysUnder(string(data), append(slices.Clone(src.path), a, "params"))
			if err != nil {
				return nil, fmt.Errorf("juju: reading action parameters from %s: %w", path, err)
			}
			for _, p := range ps {
				if !slices.Contains(params, p) {
					params = append(params, p)
				}
			}
		}
		slices.Sort(params)
		return params, nil
	}
	for _, name := range charmFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return []string{}, nil
		}
	}
	return nil, fmt.Errorf("juju: reading action parameters: %w", errors.Join(errs...))
}
