// Package charmyaml reads the YAML of a charm's metadata files
// (config.yaml, actions.yaml, charmcraft.yaml) and of the plans Pebble
// returns into the values encoding/json would give for the same document:
// map[string]any, []any, string, bool, nil, and int64 or float64 for
// numbers; and writes the block YAML of Pebble's layers ([Marshal]).
//
// It reads the part of YAML those files use: block mappings and
// sequences, plain, single- and double-quoted scalars (a plain one may
// continue on more indented lines), literal (|) and folded (>) block
// scalars with their chomping indicators, flow sequences and mappings
// (over several lines too), comments and a leading "---". Plain scalars
// are typed as YAML 1.2's core schema types them: null, ~ and an empty
// value are null; true and false (in any case Juju's YAML reader takes)
// are booleans; decimal, 0x and 0o integers are int64; decimals with a
// point or an exponent, .inf and .nan are float64; anything else is a
// string. Anchors, aliases, tags, complex keys and documents after the
// first are refused with an error naming the line, rather than read
// wrongly.
package charmyaml

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads data. An empty document is nil.
func Parse(data []byte) (any, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	p := &parser{lines: strings.Split(text, "\n")}
	if p.skip(); p.pos < len(p.lines) && strings.TrimRight(p.lines[p.pos], " ") == "---" {
		p.pos++
	}
	v, err := p.node(0)
	if err != nil {
		return nil, err
	}
	if p.skip(); p.pos < len(p.lines) {
		return nil, p.errorf("unexpected content (a second document, or indentation that does not match)")
	}
	return v, nil
}

type parser struct {
	lines []string
	pos   int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.pos+1, fmt.Sprintf(format, args...))
}

// skip moves past blank and comment lines.
func (p *parser) skip() {
	for p.pos < len(p.lines) {
		t := strings.TrimSpace(p.lines[p.pos])
		if t != "" && t[0] != '#' {
			return
		}
		p.pos++
	}
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// node reads the block node whose lines are indented at least min; nil
// when the next line is less indented.
func (p *parser) node(min int) (any, error) {
	p.skip()
	if p.pos >= len(p.lines) {
		return nil, nil
	}
	line := p.lines[p.pos]
	ind := indentOf(line)
	if ind < min {
		return nil, nil
	}
	content := line[ind:]
	if strings.HasPrefix(content, "\t") {
		return nil, p.errorf("tab indentation")
	}
	if isSeqItem(content) {
		return p.seq(ind)
	}
	if _, _, ok, err := splitKey(content); err != nil {
		return nil, p.errorf("%v", err)
	} else if ok {
		return p.mapping(ind)
	}
	p.pos++
	return p.inline(content, ind)
}

func isSeqItem(s string) bool { return s == "-" || strings.HasPrefix(s, "- ") }

// mapping reads a block mapping whose keys are at indent ind.
func (p *parser) mapping(ind int) (any, error) {
	m := map[string]any{}
	for {
		p.skip()
		if p.pos >= len(p.lines) {
			return m, nil
		}
		line := p.lines[p.pos]
		li := indentOf(line)
		if li < ind {
			return m, nil
		}
		if li > ind {
			return nil, p.errorf("unexpected indentation")
		}
		key, rest, ok, err := splitKey(line[li:])
		if err != nil || !ok {
			return nil, p.errorf("expected \"key: value\" at %q", strings.TrimSpace(line))
		}
		if _, dup := m[key]; dup {
			return nil, p.errorf("duplicate key %q", key)
		}
		p.pos++
		var v any
		switch rest = strings.TrimSpace(rest); {
		case rest == "" || rest[0] == '#':
			p.skip()
			if p.pos < len(p.lines) && indentOf(p.lines[p.pos]) == ind && isSeqItem(p.lines[p.pos][ind:]) {
				v, err = p.seq(ind)
			} else {
				v, err = p.node(ind + 1)
			}
		default:
			v, err = p.inline(rest, ind)
		}
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
}

// seq reads a block sequence whose dashes are at indent ind.
func (p *parser) seq(ind int) (any, error) {
	list := []any{}
	for {
		p.skip()
		if p.pos >= len(p.lines) {
			return list, nil
		}
		line := p.lines[p.pos]
		li := indentOf(line)
		if li < ind || (li == ind && !isSeqItem(line[li:])) {
			return list, nil
		}
		if li > ind {
			return nil, p.errorf("unexpected indentation")
		}
		content := strings.TrimLeft(line[li+1:], " ")
		if stripComment(content) == "" {
			p.pos++
			v, err := p.node(ind + 1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			continue
		}
		// The item's content starts a node at its own column: read it
		// as if the dash were a space.
		col := len(line) - len(content)
		p.lines[p.pos] = strings.Repeat(" ", col) + content
		_, _, isKey, _ := splitKey(content)
		var v any
		var err error
		if isKey || isSeqItem(content) {
			v, err = p.node(col)
		} else {
			p.pos++
			v, err = p.inline(content, ind)
		}
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
}

// inline reads the value that follows a key or a dash on its line; ind is
// the indent of that key or dash, below which continuation lines end.
func (p *parser) inline(s string, ind int) (any, error) {
	s = strings.TrimSpace(s)
	at := p.pos - 1 // the line s is on
	errorf := func(format string, args ...any) error {
		return fmt.Errorf("line %d: %s", at+1, fmt.Sprintf(format, args...))
	}
	switch s[0] {
	case '|', '>':
		return p.block(s, ind)
	case '[', '{':
		for !balanced(s) && p.pos < len(p.lines) {
			s += " " + strings.TrimSpace(p.lines[p.pos])
			p.pos++
		}
		f := &flow{s: s}
		v, err := f.value()
		if err == nil {
			if f.ws(); f.i < len(f.s) && f.s[f.i] != '#' {
				err = fmt.Errorf("unexpected %q after a flow collection", f.s[f.i:])
			}
		}
		if err != nil {
			return nil, errorf("%v", err)
		}
		return v, nil
	case '"', '\'':
		v, rest, err := quoted(s)
		if err == nil && stripComment(rest) != "" {
			err = fmt.Errorf("unexpected %q after a quoted scalar", rest)
		}
		if err != nil {
			return nil, errorf("%v", err)
		}
		return v, nil
	case '&', '*', '!', '%', '@', '`', '?':
		return nil, errorf("unsupported YAML (anchor, alias, tag or reserved character) at %q", s)
	}
	s = stripComment(s)
	// A plain scalar continues on more indented lines, folded.
	for p.pos < len(p.lines) {
		next := p.lines[p.pos]
		t := strings.TrimSpace(next)
		if t == "" || t[0] == '#' || indentOf(next) <= ind {
			break
		}
		if _, _, isKey, _ := splitKey(t); isKey {
			break
		}
		s += " " + stripComment(t)
		p.pos++
	}
	return plain(s), nil
}

// block reads a literal or folded block scalar whose header is h.
func (p *parser) block(h string, ind int) (any, error) {
	header := stripComment(h)
	literal := header[0] == '|'
	chomp, explicit := byte(0), 0
	for _, c := range header[1:] {
		switch {
		case c == '-' || c == '+':
			chomp = byte(c)
		case c >= '1' && c <= '9':
			explicit = int(c - '0')
		default:
			return nil, p.errorf("invalid block scalar header %q", header)
		}
	}
	var lines []string
	contentInd := -1
	if explicit > 0 {
		contentInd = ind + explicit
	}
	for p.pos < len(p.lines) {
		line := p.lines[p.pos]
		if strings.TrimSpace(line) == "" {
			lines = append(lines, "")
			p.pos++
			continue
		}
		li := indentOf(line)
		if li <= ind || (contentInd >= 0 && li < contentInd) {
			break
		}
		if contentInd < 0 {
			contentInd = li
		}
		lines = append(lines, line[contentInd:])
		p.pos++
	}
	// Trailing blank lines belong to the scalar only to be chomped.
	trailing := 0
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
		trailing++
	}
	var b strings.Builder
	for i, l := range lines {
		switch {
		case i == 0:
		case literal || l == "" || lines[i-1] == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(lines[i-1], " "):
			b.WriteByte('\n')
		default:
			b.WriteByte(' ')
		}
		b.WriteString(l)
	}
	s := b.String()
	if !literal {
		// In a folded scalar a blank line is the line break itself.
		s = strings.ReplaceAll(s, "\n\n", "\n")
	}
	switch {
	case len(lines) == 0:
	case chomp == '-':
	case chomp == '+':
		s += strings.Repeat("\n", trailing+1)
	default:
		s += "\n"
	}
	return s, nil
}

// splitKey splits "key: value" (or "key:"), reporting whether s is one.
func splitKey(s string) (key, rest string, ok bool, err error) {
	if s == "" || isSeqItem(s) || strings.ContainsRune("[{#|>", rune(s[0])) {
		return "", "", false, nil
	}
	if s[0] == '"' || s[0] == '\'' {
		k, r, err := quoted(s)
		if err != nil {
			return "", "", false, nil
		}
		r = strings.TrimLeft(r, " ")
		if r == ":" || strings.HasPrefix(r, ": ") {
			return k, strings.TrimPrefix(r, ":"), true, nil
		}
		return "", "", false, nil
	}
	if s[0] == '?' {
		return "", "", false, errors.New("complex keys are not supported")
	}
	i := strings.Index(s, ": ")
	if j := strings.Index(s, " #"); j >= 0 && (i < 0 || j < i) {
		s, i = s[:j], -1
	}
	switch {
	case i >= 0:
		return strings.TrimSpace(s[:i]), s[i+1:], true, nil
	case strings.HasSuffix(s, ":"):
		return strings.TrimSpace(s[:len(s)-1]), "", true, nil
	}
	return "", "", false, nil
}

// stripComment removes a comment after a plain value and surrounding space.
func stripComment(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "#") {
		return ""
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// plain types a plain scalar.
func plain(s string) any {
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
	if n, ok := integer(s); ok {
		return n
	}
	if isDecimal(s) {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	}
	return s
}

// integer reads a YAML 1.2 core schema integer: decimal digits with an
// optional sign, 0x hexadecimal or 0o octal.
func integer(s string) (int64, bool) {
	digits := func(t, set string) bool { return t != "" && strings.Trim(t, set) == "" }
	var n int64
	var err error
	switch t := strings.TrimLeft(s, "+-"); {
	case len(s)-len(t) > 1:
		return 0, false
	case digits(t, "0123456789"):
		n, err = strconv.ParseInt(s, 10, 64)
	case strings.HasPrefix(s, "0x") && digits(s[2:], "0123456789abcdefABCDEF"):
		n, err = strconv.ParseInt(s[2:], 16, 64)
	case strings.HasPrefix(s, "0o") && digits(s[2:], "01234567"):
		n, err = strconv.ParseInt(s[2:], 8, 64)
	default:
		return 0, false
	}
	return n, err == nil
}

// isDecimal reports whether s is a YAML 1.2 core schema float.
func isDecimal(s string) bool {
	s = strings.TrimLeft(s, "+-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		exp = strings.TrimLeft(exp, "+-")
		if exp == "" || strings.Trim(exp, "0123456789") != "" {
			return false
		}
	}
	whole, frac, _ := strings.Cut(mant, ".")
	return (whole != "" || frac != "") && strings.Trim(whole, "0123456789") == "" && strings.Trim(frac, "0123456789") == ""
}

// quoted reads the quoted scalar at the start of s and returns it and the
// rest of s.
func quoted(s string) (string, string, error) {
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
	return "", "", fmt.Errorf("unterminated quoted scalar %s", s)
}

var escapes = map[byte]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f",
	'r': "\r", 'e': "\x1b", ' ': " ", '"': `"`, '/': "/", '\\': `\`, 'N': "\u0085", '_': "\u00a0",
	'L': "\u2028", 'P': "\u2029",
}

func unescape(b *strings.Builder, s string) (int, error) {
	if s == "" {
		return 0, errors.New("backslash at the end of a quoted scalar")
	}
	if r, ok := escapes[s[0]]; ok {
		b.WriteString(r)
		return 1, nil
	}
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if digits == 0 || len(s) < 1+digits {
		return 0, fmt.Errorf("invalid escape \\%s", s[:min(len(s), 1+digits)])
	}
	n, err := strconv.ParseUint(s[1:1+digits], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid escape \\%s", s[:1+digits])
	}
	b.WriteRune(rune(n))
	return 1 + digits, nil
}

// balanced reports whether the flow brackets of s, outside quotes, close.
func balanced(s string) bool {
	depth := 0
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == '\\' && q == '"' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		}
	}
	return depth <= 0
}

// flow reads a flow collection.
type flow struct {
	s string
	i int
}

func (f *flow) ws() {
	for f.i < len(f.s) && f.s[f.i] == ' ' {
		f.i++
	}
}

func (f *flow) value() (any, error) {
	f.ws()
	if f.i >= len(f.s) {
		return nil, errors.New("unexpected end of a flow collection")
	}
	switch c := f.s[f.i]; c {
	case '[', '{':
		f.i++
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		var list []any
		m := map[string]any{}
		for first := true; ; first = false {
			f.ws()
			if f.i < len(f.s) && f.s[f.i] == end {
				f.i++
				break
			}
			if !first {
				if f.i >= len(f.s) || f.s[f.i] != ',' {
					return nil, fmt.Errorf("expected ',' or %q in a flow collection", end)
				}
				f.i++
				if f.ws(); f.i < len(f.s) && f.s[f.i] == end {
					f.i++
					break
				}
			}
			v, err := f.value()
			if err != nil {
				return nil, err
			}
			if c == '[' {
				list = append(list, v)
				continue
			}
			if f.ws(); f.i >= len(f.s) || f.s[f.i] != ':' {
				return nil, errors.New("expected ':' in a flow mapping")
			}
			f.i++
			val, err := f.value()
			if err != nil {
				return nil, err
			}
			k, isString := v.(string)
			if !isString {
				k = fmt.Sprint(v)
			}
			m[k] = val
		}
		if c == '[' {
			if list == nil {
				list = []any{}
			}
			return list, nil
		}
		return m, nil
	case '"', '\'':
		v, rest, err := quoted(f.s[f.i:])
		f.i = len(f.s) - len(rest)
		return v, err
	}
	start := f.i
	for f.i < len(f.s) && !strings.ContainsRune(",]}", rune(f.s[f.i])) && !(f.s[f.i] == ':' && (f.i+1 == len(f.s) || f.s[f.i+1] == ' ')) {
		f.i++
	}
	return plain(strings.TrimSpace(f.s[start:f.i])), nil
}
