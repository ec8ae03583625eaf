package juju

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// endpointSections are the metadata keys whose entries are relation
// endpoints.
var endpointSections = []string{"peers", "provides", "requires"}

// ReadEndpoints returns the names of the charm's relation endpoints (its
// requires, provides and peers), sorted, from metadata.yaml in dir or,
// without one, from charmcraft.yaml (whose unified form holds the same
// keys). It is an error wrapping [fs.ErrNotExist] when dir has neither.
//
// It reads the block-style YAML that charm metadata is written in: the
// endpoint names are the keys one level under each section. A section in
// flow style other than "{}" is an error rather than a silent miss.
func ReadEndpoints(dir string) ([]string, error) { return readKeys(dir, endpointSections, "endpoints") }

// readKeys returns the keys under sections in metadata.yaml in dir or,
// without one, charmcraft.yaml; what names them in errors.
func readKeys(dir string, sections []string, what string) ([]string, error) {
	var errs []error
	for _, name := range []string{"metadata.yaml", "charmcraft.yaml"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("juju: reading %s: %w", what, err)
		}
		keys, err := parseKeys(string(data), sections)
		if err != nil {
			return nil, fmt.Errorf("juju: reading %s from %s: %w", what, path, err)
		}
		return keys, nil
	}
	return nil, fmt.Errorf("juju: reading %s: %w", what, errors.Join(errs...))
}

// parseEndpoints lists the keys one indentation level under the top-level
// endpoint sections of a YAML document.
func parseEndpoints(doc string) ([]string, error) { return parseKeys(doc, endpointSections) }

// parseKeys lists, sorted, the keys one indentation level under the
// top-level sections of a YAML document.
func parseKeys(doc string, sections []string) ([]string, error) {
	var eps []string
	section := ""    // the endpoint section being read, if any
	childIndent := 0 // indentation of its entries, once seen
	for n, raw := range strings.Split(doc, "\n") {
		line := strings.TrimRight(stripComment(raw), " \t\r")
		if strings.TrimSpace(line) == "" || line == "---" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if strings.HasPrefix(line[indent:], "\t") {
			return nil, fmt.Errorf("line %d: tab indentation", n+1)
		}
		if indent == 0 {
			key, value, err := splitKey(line)
			if err != nil || !slices.Contains(sections, key) {
				section = ""
				continue // not a section this parser reads
			}
			section, childIndent = key, 0
			switch value {
			case "", "{}":
			default:
				return nil, fmt.Errorf("line %d: %s: %q: write endpoints one per line", n+1, key, value)
			}
			continue
		}
		if section == "" {
			continue
		}
		if childIndent == 0 {
			childIndent = indent
		}
		if indent != childIndent {
			continue // inside an endpoint's definition
		}
		key, _, err := splitKey(line[indent:])
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", n+1, section, err)
		}
		if !slices.Contains(eps, key) {
			eps = append(eps, key)
		}
	}
	slices.Sort(eps)
	return eps, nil
}

// splitKey splits a "key: value" or "key:" line, unquoting a quoted key.
func splitKey(line string) (key, value string, err error) {
	if strings.HasPrefix(line, `"`) || strings.HasPrefix(line, `'`) {
		end := strings.IndexByte(line[1:], line[0])
		if end < 0 {
			return "", "", fmt.Errorf("unterminated quoted key %s", line)
		}
		key, rest := line[1:end+1], line[end+2:]
		if v, ok := strings.CutPrefix(rest, ":"); ok && (v == "" || v[0] == ' ') {
			return key, strings.TrimSpace(v), nil
		}
		return "", "", fmt.Errorf("want \"key:\", got %s", strconv.Quote(line))
	}
	i := strings.Index(line, ":")
	if i <= 0 || (i+1 < len(line) && line[i+1] != ' ') {
		return "", "", fmt.Errorf("want \"key:\", got %s", strconv.Quote(line))
	}
	return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:]), nil
}

// stripComment removes a "#" comment that starts a line or follows white
// space, outside quotes.
func stripComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}
