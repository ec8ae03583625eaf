// Package yamlblock reads and writes the block YAML that Pebble's API
// speaks: the plan Pebble returns (written by gopkg.in/yaml.v3) and the
// layers it reads. It reads nested block mappings and sequences whose
// scalars are plain, single-quoted, double-quoted (on one line) or
// literal blocks (|, |-, |+), and the flow forms [] and {} of empty
// collections, as yaml.v3 writes them; anything else
// (anchors, tags, folded blocks, multi-line flow or quoted scalars,
// several documents) is an error naming the line, rather than a value
// read wrong.
//
// Scalars resolve as yaml.v3 resolves them into an interface: a quoted or
// block scalar is a string; a plain one is nil (null, ~, empty), a bool
// (true, false), an int64 or a float64 when it reads as one, and a
// string otherwise.
package yamlblock

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse reads a YAML document into map[string]any, []any and scalars.
// An empty document is nil.
func Parse(doc string) (any, error) {
	p := &parser{}
	for n, raw := range strings.Split(strings.ReplaceAll(doc, "\r\n", "\n"), "\n") {
		p.lines = append(p.lines, line{n: n + 1, text: raw})
	}
	p.skipBlank()
	if p.i < len(p.lines) && strings.TrimSpace(p.lines[p.i].text) == "---" {
		p.i++
		p.skipBlank()
	}
	if p.i == len(p.lines) {
		return nil, nil
	}
	l := p.lines[p.i]
	var v any
	var err error
	if t := strings.TrimSpace(l.text); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		p.i++
		if v, err = flow(t); err != nil {
			return nil, p.errorf(l, "%v", err)
		}
	} else if v, err = p.node(l.indent()); err != nil {
		return nil, err
	}
	p.skipBlank()
	if p.i < len(p.lines) {
		return nil, p.errorf(p.lines[p.i], "unexpected %q after the document", strings.TrimSpace(p.lines[p.i].text))
	}
	return v, nil
}

type line struct {
	n    int
	text string
}

// indent is the count of leading spaces.
func (l line) indent() int { return len(l.text) - len(strings.TrimLeft(l.text, " ")) }

// blank reports whether the line holds nothing but spaces or a comment.
func (l line) blank() bool {
	t := strings.TrimSpace(l.text)
	return t == "" || strings.HasPrefix(t, "#")
}

type parser struct {
	lines []line
	i     int
}

func (p *parser) errorf(l line, format string, args ...any) error {
	return fmt.Errorf("yaml: line %d: %s", l.n, fmt.Sprintf(format, args...))
}

func (p *parser) skipBlank() {
	for p.i < len(p.lines) && p.lines[p.i].blank() {
		p.i++
	}
}

// node reads the block collection whose first line, p.lines[p.i], is
// indented by indent.
func (p *parser) node(indent int) (any, error) {
	l := p.lines[p.i]
	if strings.ContainsRune(l.text[:indent], '\t') || strings.HasPrefix(l.text[indent:], "\t") {
		return nil, p.errorf(l, "tab indentation")
	}
	rest := l.text[indent:]
	if rest == "-" || strings.HasPrefix(rest, "- ") {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

// sequence reads "- item" lines indented by indent.
func (p *parser) sequence(indent int) ([]any, error) {
	out := []any{}
	for {
		p.skipBlank()
		if p.i == len(p.lines) {
			return out, nil
		}
		l := p.lines[p.i]
		if l.indent() < indent {
			return out, nil
		}
		rest := l.text[indent:]
		if l.indent() != indent || (rest != "-" && !strings.HasPrefix(rest, "- ")) {
			return nil, p.errorf(l, "want a sequence item \"- \" at column %d", indent+1)
		}
		item := strings.TrimLeft(strings.TrimPrefix(rest, "-"), " ")
		if item == "" {
			p.i++
			v, err := p.nested(indent, l)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		if key, _, ok, err := splitKey(item); err != nil {
			return nil, p.errorf(l, "%v", err)
		} else if ok {
			return nil, p.errorf(l, "a mapping in a sequence item (%q) is not supported", key)
		}
		v, err := p.value(item, indent, l)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// mapping reads "key: value" lines indented by indent.
func (p *parser) mapping(indent int) (map[string]any, error) {
	out := map[string]any{}
	for {
		p.skipBlank()
		if p.i == len(p.lines) {
			return out, nil
		}
		l := p.lines[p.i]
		if l.indent() < indent {
			return out, nil
		}
		if l.indent() > indent {
			return nil, p.errorf(l, "unexpected indentation")
		}
		key, val, ok, err := splitKey(l.text[indent:])
		if err != nil {
			return nil, p.errorf(l, "%v", err)
		}
		if !ok {
			return nil, p.errorf(l, "want \"key: value\", got %q", strings.TrimSpace(l.text))
		}
		if _, dup := out[key]; dup {
			return nil, p.errorf(l, "key %q repeated", key)
		}
		var v any
		if val == "" {
			p.i++
			v, err = p.nested(indent, l)
		} else {
			v, err = p.value(val, indent, l)
		}
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
}

// nested reads the value of a key or item whose line (l, indented by
// indent) ended after it: a collection on the next lines, indented more
// (or a sequence at the same indentation, for a key), or null.
func (p *parser) nested(indent int, l line) (any, error) {
	p.skipBlank()
	if p.i == len(p.lines) {
		return nil, nil
	}
	next := p.lines[p.i]
	switch in := next.indent(); {
	case in > indent:
		return p.node(in)
	case in == indent && strings.HasPrefix(next.text[in:], "- ") && !strings.HasPrefix(l.text[indent:], "-"):
		return p.sequence(in)
	}
	return nil, nil
}

// value reads the scalar (or one-line flow collection) s that follows a
// key or item on line l indented by indent, and the block scalar it
// introduces; p.i is l's index and is left after the value.
func (p *parser) value(s string, indent int, l line) (any, error) {
	p.i++
	switch s[0] {
	case '|':
		return p.literal(s, indent, l)
	case '>', '&', '*', '!', '%', '@', '`':
		return nil, p.errorf(l, "%q is not supported", s)
	case '"':
		v, rest, err := doubleQuoted(s)
		if err == nil && strings.TrimSpace(rest) != "" {
			err = fmt.Errorf("unexpected %q after a quoted scalar", rest)
		}
		if err != nil {
			return nil, p.errorf(l, "%v", err)
		}
		return v, nil
	case '\'':
		v, rest, err := singleQuoted(s)
		if err == nil && strings.TrimSpace(rest) != "" {
			err = fmt.Errorf("unexpected %q after a quoted scalar", rest)
		}
		if err != nil {
			return nil, p.errorf(l, "%v", err)
		}
		return v, nil
	case '[', '{':
		v, err := flow(strings.TrimRight(s, " "))
		if err != nil {
			return nil, p.errorf(l, "%v", err)
		}
		return v, nil
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return resolve(strings.TrimRight(s, " ")), nil
}

// literal reads a literal block scalar introduced by header ("|", "|-",
// "|+", with an optional indentation digit) on line l.
func (p *parser) literal(header string, indent int, l line) (string, error) {
	chomp, width := byte(0), 0
	for _, c := range header[1:] {
		switch {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = byte(c)
		case c >= '1' && c <= '9' && width == 0:
			width = indent + int(c-'0')
		default:
			return "", p.errorf(l, "block scalar header %q is not supported", header)
		}
	}
	var text []string
	for ; p.i < len(p.lines); p.i++ {
		t := p.lines[p.i].text
		if strings.TrimSpace(t) == "" {
			text = append(text, "")
			continue
		}
		in := len(t) - len(strings.TrimLeft(t, " "))
		if width == 0 {
			if in <= indent {
				break
			}
			width = in
		}
		if in < width {
			break
		}
		text = append(text, t[width:])
	}
	// Blank lines after the block belong to it only as trailing breaks.
	n := len(text)
	for n > 0 && text[n-1] == "" {
		n--
	}
	body := strings.Join(text[:n], "\n")
	switch {
	case n == 0:
		return "", nil
	case chomp == '-':
		return body, nil
	case chomp == '+':
		return body + strings.Repeat("\n", len(text)-n+1), nil
	}
	return body + "\n", nil
}

// splitKey splits "key: value" or "key:", the key plain or quoted; ok is
// false when s is not a key.
func splitKey(s string) (key, val string, ok bool, err error) {
	if s[0] == '"' || s[0] == '\'' {
		var rest string
		if s[0] == '"' {
			key, rest, err = doubleQuoted(s)
		} else {
			key, rest, err = singleQuoted(s)
		}
		if err != nil {
			return "", "", false, err
		}
		if rest == ":" || strings.HasPrefix(rest, ": ") {
			return key, strings.TrimSpace(rest[1:]), true, nil
		}
		return "", "", false, nil
	}
	if strings.HasSuffix(s, ":") && !strings.Contains(s, ": ") {
		return strings.TrimSpace(s[:len(s)-1]), "", true, nil
	}
	i := strings.Index(s, ": ")
	if i <= 0 {
		return "", "", false, nil
	}
	return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+2:]), true, nil
}

// doubleQuoted reads the double-quoted scalar that starts s and returns
// it and what follows it.
func doubleQuoted(s string) (string, string, error) {
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", errors.New("a quoted scalar that goes on to the next line is not supported")
			}
			e := s[i+1]
			i += 2
			if r, ok := simpleEscapes[e]; ok {
				b.WriteRune(r)
				continue
			}
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if n == 0 || i+n > len(s) {
				return "", "", fmt.Errorf("bad escape \\%c", e)
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(v)) {
				return "", "", fmt.Errorf("bad escape \\%c%s", e, s[i:i+n])
			}
			b.WriteRune(rune(v))
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", "", errors.New("a quoted scalar that goes on to the next line is not supported")
}

// simpleEscapes are YAML's one-character escapes.
var simpleEscapes = map[byte]rune{
	'0': 0, 'a': '\a', 'b': '\b', 't': '\t', '\t': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r',
	'e': 0x1b, ' ': ' ', '"': '"', '/': '/', '\\': '\\', 'N': 0x85, '_': 0xa0, 'L': 0x2028, 'P': 0x2029,
}

// singleQuoted reads the single-quoted scalar that starts s and returns
// it and what follows it.
func singleQuoted(s string) (string, string, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], nil
	}
	return "", "", errors.New("a quoted scalar that goes on to the next line is not supported")
}

// flow reads the flow forms of the empty collections, [] and {}.
func flow(s string) (any, error) {
	switch strings.Join(strings.Fields(s), "") {
	case "[]":
		return []any{}, nil
	case "{}":
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("flow collections other than [] and {} are not supported: %q", s)
}

// resolve gives a plain scalar its type, as yaml.v3 does.
func resolve(s string) any {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1)
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1)
	case ".nan", ".NaN", ".NAN":
		return math.NaN()
	}
	if c := s[0]; c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') {
		t := strings.ReplaceAll(s, "_", "")
		if n, err := strconv.ParseInt(t, 0, 64); err == nil {
			return n
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil && !strings.ContainsAny(t, "xXpP") {
			return f
		}
	}
	return s
}
