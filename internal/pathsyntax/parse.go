// Package pathsyntax reads and writes the text form of field paths
// ("status.containerStatuses[name=app].state"), on plain element data: a
// [Segment] is a kind and the key, value or index that kind uses.
//
// Invariants:
//   - The kinds are numbered as the public path vocabulary numbers them
//     (key, index, any, match), so that converting one to the other is a
//     conversion of the number.
//   - Every segment that the printer writes, for any key, field or value
//     and any non-negative index, is text that the parser reads back as
//     the same segment; a path's first key is never written so that it
//     reads as JSONPath ('$') or a JSON Pointer ('/').
//   - The parser reads a path one segment at a time and allocates nothing
//     but the strings it unquotes; an error says at which byte offset it
//     found what, and what it expected there.
package pathsyntax

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind tells what a [Segment] addresses.
type Kind uint8

// The kinds of segment, numbered as the public vocabulary numbers them.
const (
	Key   Kind = iota // a map key: `status` or `["example.com/x"]`
	Index             // a list element by position: `[3]`
	Any               // every list element and map value: `[*]`
	Match             // the list element whose field Key has Value: `[name=app]`
)

// Segment is one step of a path. Key holds the map key of a [Key] segment
// and the field of a [Match]; Value the value of a Match; Index the
// position of an [Index] segment. The fields a Kind does not use are zero.
type Segment struct {
	Kind  Kind
	Key   string
	Value string
	Index int
}

// Error reports text that is not a path: where, and what was expected.
type Error struct {
	Offset int   // byte offset in the input where the problem was found
	Err    error // what was expected
}

// Error formats the error as its reason.
func (e *Error) Error() string { return fmt.Sprintf("at offset %d: %v", e.Offset, e.Err) }

// Parser reads a path one segment at a time: see [Parser.Next].
type Parser struct {
	in  string
	pos int
	n   int // segments read
}

// NewParser returns a parser of the path text s.
func NewParser(s string) *Parser { return &Parser{in: s} }

func (p *Parser) fail(off int, format string, args ...any) (Segment, bool, error) {
	return Segment{}, false, &Error{Offset: off, Err: fmt.Errorf(format, args...)}
}

func isKeyByte(c byte) bool {
	switch c {
	case '.', '[', ']', '"', ' ', '\t', '\n', '\r', '\v', '\f':
		return false
	}
	return true
}

// Next returns the next segment of the path and true, or false at its end,
// or an *[Error]. The empty path is an error: the root is never written.
func (p *Parser) Next() (Segment, bool, error) {
	if p.n == 0 && p.pos == 0 {
		if p.in == "" {
			return p.fail(0, "empty path: expected a key such as status.phase")
		}
		// The two syntaxes users know from elsewhere get an answer in ours.
		switch p.in[0] {
		case '$':
			return p.fail(0, "looks like JSONPath: opbus paths have no '$' or '$.' (write status.phase, spec.containers[name=app].image)")
		case '/':
			return p.fail(0, "looks like a JSON Pointer: opbus paths are dotted (write spec.version for /spec/version, spec.containers[0] for /spec/containers/0)")
		}
	}
	if p.pos >= len(p.in) {
		return Segment{}, false, nil
	}
	switch c := p.in[p.pos]; {
	case c == '[':
		return p.counted(p.bracket())
	case c == '.':
		if p.n == 0 {
			return p.fail(p.pos, "leading dot: expected a key")
		}
		p.pos++
		if p.pos == len(p.in) {
			return p.fail(p.pos, "trailing dot: expected a key after '.'")
		}
		if c := p.in[p.pos]; c == '.' {
			return p.fail(p.pos, "empty key between dots: expected a key")
		} else if c == '[' {
			return p.fail(p.pos, "'[' after '.': write a[0] or a[\"k\"], not a.[0]")
		}
	case c == ']':
		return p.fail(p.pos, "unexpected ']': no '[' is open")
	case p.n > 0:
		return p.fail(p.pos, "unexpected %q: expected '.' or '['", c)
	}
	return p.counted(p.key())
}

// counted counts a segment read.
func (p *Parser) counted(s Segment, ok bool, err error) (Segment, bool, error) {
	if ok {
		p.n++
	}
	return s, ok, err
}

func (p *Parser) key() (Segment, bool, error) {
	start := p.pos
	for p.pos < len(p.in) && isKeyByte(p.in[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		c := p.in[p.pos]
		if c == ']' {
			return p.fail(p.pos, "unexpected ']': no '[' is open")
		}
		if c == '"' {
			return p.fail(p.pos, "quoted key outside brackets: write [\"key\"]")
		}
		return p.fail(p.pos, "unexpected %q: expected a key", c)
	}
	return Segment{Kind: Key, Key: p.in[start:p.pos]}, true, nil
}

// bracket parses one of [3], [*], [field=value], [field="value"], ["key"]
// or ["field"=value].
func (p *Parser) bracket() (Segment, bool, error) {
	open := p.pos
	p.pos++ // '['
	if p.pos == len(p.in) {
		return p.fail(open, "unclosed '[': expected an index, '*', a quoted key or field=value")
	}
	switch c := p.in[p.pos]; {
	case c == ']':
		return p.fail(p.pos, "empty brackets: expected an index, '*', a quoted key or field=value")
	case c == '*':
		p.pos++
		return p.closed(open, Segment{Kind: Any})
	case c == '"':
		k, err := p.quoted()
		if err != nil {
			return Segment{}, false, err
		}
		if p.pos < len(p.in) && p.in[p.pos] == '=' {
			return p.matchValue(open, k) // ["field"=value]
		}
		return p.closed(open, Segment{Kind: Key, Key: k})
	case c == '-' || (c >= '0' && c <= '9'):
		return p.index(open)
	}
	return p.match(open)
}

// index parses an index after '[', or a match on a field that starts like
// a number.
func (p *Parser) index(open int) (Segment, bool, error) {
	start := p.pos
	for p.pos < len(p.in) && p.in[p.pos] != ']' && p.in[p.pos] != '=' && p.in[p.pos] != '[' {
		p.pos++
	}
	if p.pos < len(p.in) && p.in[p.pos] == '=' {
		p.pos = start
		return p.match(open)
	}
	digits := p.in[start:p.pos]
	if !allDigits(digits) {
		return p.fail(start, "bad index %s: expected a non-negative decimal number", digits)
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return p.fail(start, "bad index %s: too large", digits)
	}
	return p.closed(open, Segment{Kind: Index, Index: n})
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// match parses field=value or field="value" after '['.
func (p *Parser) match(open int) (Segment, bool, error) {
	start := p.pos
	for p.pos < len(p.in) && isKeyByte(p.in[p.pos]) && p.in[p.pos] != '=' {
		p.pos++
	}
	field := p.in[start:p.pos]
	if p.pos == len(p.in) {
		return p.fail(open, "unclosed '[': expected ']'")
	}
	if p.in[p.pos] != '=' {
		if field == "" {
			return p.fail(p.pos, "unexpected %q: expected an index, '*', a quoted key or field=value", p.in[p.pos])
		}
		return p.fail(p.pos, "unexpected %q in [%s…]: expected field=value (unquoted keys go after a dot)", p.in[p.pos], field)
	}
	if field == "" {
		return p.fail(p.pos, "missing field name before '=': expected field=value")
	}
	return p.matchValue(open, field)
}

// matchValue parses =value or ="value" after the field of a match.
func (p *Parser) matchValue(open int, field string) (Segment, bool, error) {
	p.pos++ // '='
	if p.pos < len(p.in) && p.in[p.pos] == '=' {
		return p.fail(p.pos-1, "'==' in [%s==…]: a match has one '=', as in [%s=value]", field, field)
	}
	var value string
	if p.pos < len(p.in) && p.in[p.pos] == '"' {
		v, err := p.quoted()
		if err != nil {
			return Segment{}, false, err
		}
		value = v
	} else {
		vs := p.pos
		for p.pos < len(p.in) && p.in[p.pos] != ']' && p.in[p.pos] != '[' && p.in[p.pos] != '"' {
			p.pos++
		}
		value = p.in[vs:p.pos]
		if value == "" {
			return p.fail(vs, "missing value after '=': expected field=value")
		}
		if strings.TrimSpace(value) != value {
			return p.fail(vs, "white space around value %s: quote it as %s=%q", value, field, value)
		}
	}
	return p.closed(open, Segment{Kind: Match, Key: field, Value: value})
}

// quoted parses a Go-syntax double-quoted string at p.pos.
func (p *Parser) quoted() (string, error) {
	start := p.pos
	i := p.pos + 1
	for i < len(p.in) && p.in[i] != '"' {
		if p.in[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(p.in) {
		_, _, err := p.fail(start, "unterminated quoted string: expected a closing '\"'")
		return "", err
	}
	s, err := strconv.Unquote(p.in[start : i+1])
	if err != nil {
		_, _, err := p.fail(start, "bad quoted string %s: expected Go string syntax", p.in[start:i+1])
		return "", err
	}
	p.pos = i + 1
	return s, nil
}

// closed reads the ']' that closes the bracket opened at open, and then
// returns s.
func (p *Parser) closed(open int, s Segment) (Segment, bool, error) {
	if p.pos == len(p.in) {
		return p.fail(open, "unclosed '[': expected ']'")
	}
	if p.in[p.pos] != ']' {
		return p.fail(p.pos, "unexpected %q: expected ']'", p.in[p.pos])
	}
	p.pos++
	return s, true, nil
}
