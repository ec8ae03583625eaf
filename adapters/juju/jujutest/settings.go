package jujutest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseSettings parses the map that state-set and relation-set read with
// --file. Juju reads it as YAML into a map of strings; the fake accepts the
// two shapes charms write:
//
//   - a JSON object (which is YAML too), whose values are strings, or
//     numbers, booleans or null, turned into their text ("" for null);
//   - a block of "key: value" lines, one per key, with blank lines, "#"
//     comments and a leading "---" allowed. Keys and values are plain,
//     'single-quoted' (a quote inside written twice) or "double-quoted"
//     (with YAML's backslash escapes). An empty value, "~" and "null" read
//     as "".
//
// Characters YAML refuses are refused as Juju refuses them
// ([checkYAMLInput]). Anything else YAML allows (nesting, lists, flow or block scalars,
// anchors, tags, values over several lines) is rejected with an error
// rather than read wrongly. Duplicate keys are an error.
func parseSettings(data []byte) (map[string]string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return map[string]string{}, nil
	}
	if !utf8.Valid(trimmed) {
		return nil, errors.New("settings are not valid UTF-8")
	}
	if err := checkYAMLInput(string(trimmed), trimmed[0] == '{'); err != nil {
		return nil, err
	}
	if trimmed[0] == '{' {
		return parseJSONSettings(trimmed)
	}
	out := map[string]string{}
	for n, line := range strings.Split(string(trimmed), "\n") {
		line = strings.TrimSuffix(line, "\r")
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || (n == 0 && t == "---") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, fmt.Errorf("line %d: indented lines (nesting, continuations) are not supported", n+1)
		}
		k, v, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("line %d: duplicate key %q", n+1, k)
		}
		out[k] = v
	}
	return out, nil
}

// parseJSONSettings parses a JSON object of scalars.
func parseJSONSettings(data []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the JSON object")
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case bool:
			out[k] = strconv.FormatBool(v)
		case nil:
			out[k] = ""
		default:
			return nil, fmt.Errorf("value of key %q is not a string", k)
		}
	}
	return out, nil
}

// parseLine parses one "key: value" line.
func parseLine(line string) (key, value string, err error) {
	var rest string
	switch line[0] {
	case '"', '\'':
		if key, rest, err = quoted(line); err != nil {
			return "", "", err
		}
		var found bool
		if rest, found = strings.CutPrefix(rest, ":"); !found {
			return "", "", errors.New(`want "key: value"`)
		}
	default:
		if strings.ContainsRune("[]{}|>&*!%@`,?-", rune(line[0])) {
			return "", "", fmt.Errorf("unsupported YAML at %q", line)
		}
		i := strings.Index(line, ": ")
		if i < 0 {
			if !strings.HasSuffix(line, ":") {
				return "", "", errors.New(`want "key: value"`)
			}
			i = len(line) - 1
		}
		key, rest = strings.TrimSpace(line[:i]), line[i+1:]
	}
	value, err = scalar(strings.TrimSpace(rest))
	return key, value, err
}

// scalar parses a value: empty, plain, or quoted.
func scalar(s string) (string, error) {
	if s == "" || s[0] == '#' {
		return "", nil
	}
	if s[0] == '"' || s[0] == '\'' {
		v, rest, err := quoted(s)
		if err != nil {
			return "", err
		}
		if rest = strings.TrimSpace(rest); rest != "" && rest[0] != '#' {
			return "", fmt.Errorf("unexpected %q after quoted value", rest)
		}
		return v, nil
	}
	if strings.ContainsRune("[]{}|>&*!%@`", rune(s[0])) {
		return "", fmt.Errorf("unsupported YAML value %q", s)
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	switch s {
	case "~", "null", "Null", "NULL":
		return "", nil
	}
	return s, nil
}

// quoted parses the quoted scalar at the start of s and returns it and the
// rest of s.
func quoted(s string) (value, rest string, err error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '\'' && c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), s[i+1:], nil
		case q == '"' && c == '"':
			return b.String(), s[i+1:], nil
		case q == '"' && c == '\\':
			n, err := unescape(&b, s[i+1:])
			if err != nil {
				return "", "", err
			}
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated quoted string %s", s)
}

// simpleEscapes are YAML's one-character escapes in double quotes.
var simpleEscapes = map[byte]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n",
	'v': "\v", 'f': "\f", 'r': "\r", 'e': "\x1b", ' ': " ", '"': `"`,
	'/': "/", '\\': `\`, 'N': "\u0085", '_': "\u00a0", 'L': "\u2028",
	'P': "\u2029",
}

// unescape writes the escape sequence at the start of s (after the
// backslash) to b and returns how many bytes of s it used.
func unescape(b *strings.Builder, s string) (int, error) {
	if s == "" {
		return 0, errors.New("backslash at end of string")
	}
	if r, found := simpleEscapes[s[0]]; found {
		b.WriteString(r)
		return 1, nil
	}
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if digits == 0 || len(s) < 1+digits {
		return 0, fmt.Errorf("invalid escape \\%s", s[:min(len(s), 1+digits)])
	}
	n, err := strconv.ParseUint(s[1:1+digits], 16, 32)
	if err != nil || !utf8.ValidRune(rune(n)) {
		return 0, fmt.Errorf("invalid escape \\%s", s[:1+digits])
	}
	b.WriteRune(rune(n))
	return 1 + digits, nil
}
