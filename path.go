package opbus

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// SegmentKind tells what a [Segment] of a [Path] addresses.
type SegmentKind uint8

const (
	// SegKey addresses a map key: `status` or `["example.com/x"]`.
	SegKey SegmentKind = iota
	// SegIndex addresses a list element by position: `[3]`.
	SegIndex
	// SegAny addresses every element of a list and every value of a map: `[*]`.
	SegAny
	// SegMatch addresses the list element whose field equals a value: `[name=app]`.
	SegMatch
)

// Segment is one step of a [Path].
//
// Key holds the map key for [SegKey] and the field name for [SegMatch];
// Value holds the value a [SegMatch] element's field must have; Index holds
// the position for [SegIndex], which is not negative. The fields a Kind
// does not use are zero. Any such segment prints ([Path.String]) as text
// that [ParsePath] reads back as the same segment.
type Segment struct {
	Kind  SegmentKind
	Key   string
	Value string
	Index int
}

// MapKey returns a segment that addresses the map key k.
func MapKey(k string) Segment { return Segment{Kind: SegKey, Key: k} }

// ListIndex returns a segment that addresses the list element at position i.
// It panics if i is negative, as indexing a slice does: no element is
// there, and no path text names one.
func ListIndex(i int) Segment {
	if i < 0 {
		panic(fmt.Sprintf("opbus: ListIndex(%d): expected a non-negative index", i))
	}
	return Segment{Kind: SegIndex, Index: i}
}

// Path addresses a subtree of an object: a sequence of segments from the root.
// The zero Path (no segments) is the root, the whole object; it prints as the
// empty string and is never parsed, only produced.
//
// Paths are written with dots between keys and brackets for everything else:
//
//	status.containerStatuses
//	spec.containers[0].image
//	status.containerStatuses[name=app].state
//	status.conditions[*].status
//	metadata.annotations["example.com/x"]
//
// An unquoted key is any run of characters other than '.', '[', ']', '"' and
// white space; a key that holds any of those is written quoted, in Go string
// syntax. `[*]` matches every element of a list and every value of a map.
// In `[field=value]` the value may be quoted too (`[name="a b"]`), and so
// may the field, for a field that is not an unquoted key or that holds '='
// or starts with '*': `["app name"=web]`.
type Path []Segment

// ParsePath parses a field path. The empty string is an error: the root path
// is never written by users, only produced by [Compare] for a change of the
// whole object.
func ParsePath(s string) (Path, error) {
	p := pathParser{in: s}
	return p.parse()
}

// MustParsePath is like [ParsePath] but panics on a bad path. It is meant for
// package-level variables holding constant paths.
func MustParsePath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

type pathParser struct {
	in  string
	pos int
	out Path
}

func (p *pathParser) fail(off int, format string, args ...any) (Path, error) {
	return nil, &PathError{Path: p.in, Offset: off, Err: fmt.Errorf(format, args...)}
}

func isKeyByte(c byte) bool {
	switch c {
	case '.', '[', ']', '"', ' ', '\t', '\n', '\r', '\v', '\f':
		return false
	}
	return true
}

func (p *pathParser) parse() (Path, error) {
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
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '[':
			if _, err := p.bracket(); err != nil {
				return nil, err
			}
		case c == '.':
			if len(p.out) == 0 {
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
			if _, err := p.key(); err != nil {
				return nil, err
			}
		default:
			if c == ']' {
				return p.fail(p.pos, "unexpected ']': no '[' is open")
			}
			if len(p.out) > 0 {
				return p.fail(p.pos, "unexpected %q: expected '.' or '['", c)
			}
			if _, err := p.key(); err != nil {
				return nil, err
			}
		}
	}
	return p.out, nil
}

func (p *pathParser) key() (Path, error) {
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
	p.out = append(p.out, MapKey(p.in[start:p.pos]))
	return p.out, nil
}

// bracket parses one of [3], [*], [field=value], [field="value"], ["key"]
// or ["field"=value].
func (p *pathParser) bracket() (Path, error) {
	open := p.pos
	p.pos++ // '['
	if p.pos == len(p.in) {
		return p.fail(open, "unclosed '[': expected an index, '*', a quoted key or field=value")
	}
	c := p.in[p.pos]
	switch {
	case c == ']':
		return p.fail(p.pos, "empty brackets: expected an index, '*', a quoted key or field=value")
	case c == '*':
		p.pos++
		if err := p.close(open); err != nil {
			return nil, err
		}
		p.out = append(p.out, Segment{Kind: SegAny})
	case c == '"':
		k, err := p.quoted()
		if err != nil {
			return nil, err
		}
		if p.pos < len(p.in) && p.in[p.pos] == '=' {
			return p.matchValue(open, k) // ["field"=value]
		}
		if err := p.close(open); err != nil {
			return nil, err
		}
		p.out = append(p.out, MapKey(k))
	case c == '-' || (c >= '0' && c <= '9'):
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
		if err := p.close(open); err != nil {
			return nil, err
		}
		p.out = append(p.out, ListIndex(n))
	default:
		return p.match(open)
	}
	return p.out, nil
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
func (p *pathParser) match(open int) (Path, error) {
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
func (p *pathParser) matchValue(open int, field string) (Path, error) {
	p.pos++ // '='
	if p.pos < len(p.in) && p.in[p.pos] == '=' {
		return p.fail(p.pos-1, "'==' in [%s==…]: a match has one '=', as in [%s=value]", field, field)
	}
	var value string
	if p.pos < len(p.in) && p.in[p.pos] == '"' {
		v, err := p.quoted()
		if err != nil {
			return nil, err
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
	if err := p.close(open); err != nil {
		return nil, err
	}
	p.out = append(p.out, Segment{Kind: SegMatch, Key: field, Value: value})
	return p.out, nil
}

// quoted parses a Go-syntax double-quoted string at p.pos.
func (p *pathParser) quoted() (string, error) {
	start := p.pos
	i := p.pos + 1
	for i < len(p.in) && p.in[i] != '"' {
		if p.in[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(p.in) {
		_, err := p.fail(start, "unterminated quoted string: expected a closing '\"'")
		return "", err
	}
	s, err := strconv.Unquote(p.in[start : i+1])
	if err != nil {
		_, err := p.fail(start, "bad quoted string %s: expected Go string syntax", p.in[start:i+1])
		return "", err
	}
	p.pos = i + 1
	return s, nil
}

func (p *pathParser) close(open int) error {
	if p.pos == len(p.in) {
		_, err := p.fail(open, "unclosed '[': expected ']'")
		return err
	}
	if p.in[p.pos] != ']' {
		_, err := p.fail(p.pos, "unexpected %q: expected ']'", p.in[p.pos])
		return err
	}
	p.pos++
	return nil
}

// String returns the path in the syntax [ParsePath] reads; the root path is "".
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		s.write(&b, i == 0)
	}
	return b.String()
}

// String returns the segment as it appears inside a path.
func (s Segment) String() string {
	var b strings.Builder
	s.write(&b, true)
	return b.String()
}

func (s Segment) write(b *strings.Builder, first bool) {
	switch s.Kind {
	case SegKey:
		// A path starting with '$' or '/' reads as JSONPath or a JSON
		// Pointer (ParsePath refuses it): such a first key is quoted.
		if plainKey(s.Key) && !(first && (s.Key[0] == '$' || s.Key[0] == '/')) {
			if !first {
				b.WriteByte('.')
			}
			b.WriteString(s.Key)
			return
		}
		b.WriteByte('[')
		b.WriteString(strconv.Quote(s.Key))
		b.WriteByte(']')
	case SegIndex:
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(s.Index))
		b.WriteByte(']')
	case SegAny:
		b.WriteString("[*]")
	case SegMatch:
		b.WriteByte('[')
		if plainField(s.Key) {
			b.WriteString(s.Key)
		} else {
			b.WriteString(strconv.Quote(s.Key))
		}
		b.WriteByte('=')
		if plainValue(s.Value) {
			b.WriteString(s.Value)
		} else {
			b.WriteString(strconv.Quote(s.Value))
		}
		b.WriteByte(']')
	}
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isKeyByte(k[i]) {
			return false
		}
	}
	return true
}

// plainField reports whether a match's field can be written unquoted:
// bracket reads "[*" as a wildcard, and a field ends at its first '='.
func plainField(k string) bool {
	return plainKey(k) && k[0] != '*' && !strings.Contains(k, "=")
}

func plainValue(v string) bool {
	if v == "" || strings.TrimSpace(v) != v || v[0] == '=' { // [k==…] reads as a mistake
		return false
	}
	return !strings.ContainsAny(v, "[]\"")
}

// Equal reports whether p and q have the same segments.
func (p Path) Equal(q Path) bool {
	if len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// hasPrefix reports whether q is a prefix of p, segment by segment: p is q
// itself or lies below it. Wildcards are compared literally, not matched.
func (p Path) hasPrefix(q Path) bool {
	return len(q) <= len(p) && p[:len(q)].Equal(q)
}

// isPattern reports whether p has a [SegAny] or [SegMatch] segment, so that it
// stands for a set of concrete paths rather than one.
func (p Path) isPattern() bool {
	for _, s := range p {
		if s.Kind == SegAny || s.Kind == SegMatch {
			return true
		}
	}
	return false
}

// covers reports whether the concrete path c lies at or below a subtree that
// the pattern p addresses. For example status.conditions[*] covers
// status.conditions[2].reason, and status covers status itself.
//
// A [SegMatch] segment of p covers a SegMatch segment of c with the same field
// and value (the form [Compare] produces for lists with a configured list
// key); paths alone cannot tell which index an element with a given key has.
func (p Path) covers(c Path) bool {
	if len(c) < len(p) {
		return false
	}
	for i := range p {
		if !p[i].matches(c[i]) {
			return false
		}
	}
	return true
}

// coversAll reports whether every concrete path that the pattern q stands
// for lies at or below a path that the pattern p stands for: a [SegAny] of
// p covers anything, and any other segment of p covers only the same
// segment in q. For a concrete q it is [Path.covers].
func (p Path) coversAll(q Path) bool {
	if len(q) < len(p) {
		return false
	}
	for i, s := range p {
		if s.Kind != SegAny && (q[i].Kind == SegAny || !s.matches(q[i])) {
			return false
		}
	}
	return true
}

// overlaps reports whether the pattern p and the concrete path c are on one
// line of descent: c lies at or below p, or c is an ancestor of what p
// addresses (so a change at c may change the subtree at p).
func (p Path) overlaps(c Path) bool {
	n := min(len(p), len(c))
	for i := 0; i < n; i++ {
		if !p[i].matches(c[i]) {
			return false
		}
	}
	return true
}

// matches reports whether pattern segment s matches concrete segment c.
func (s Segment) matches(c Segment) bool {
	switch s.Kind {
	case SegAny:
		return true
	case SegKey:
		return c.Kind == SegKey && c.Key == s.Key
	case SegIndex:
		return c.Kind == SegIndex && c.Index == s.Index
	case SegMatch:
		return c.Kind == SegMatch && c.Key == s.Key && c.Value == s.Value
	}
	return false
}

// comparePaths orders paths as diffs are ordered: segment by segment, keys in
// byte order, indexes by number, keyed elements by value; a path sorts
// before the paths below it.
func comparePaths(a, b Path) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x.Kind != y.Kind {
			return cmp.Compare(x.Kind, y.Kind)
		}
		var r int
		switch x.Kind {
		case SegIndex:
			r = cmp.Compare(x.Index, y.Index)
		case SegMatch:
			if r = strings.Compare(x.Key, y.Key); r == 0 {
				r = strings.Compare(x.Value, y.Value)
			}
		default:
			r = strings.Compare(x.Key, y.Key)
		}
		if r != 0 {
			return r
		}
	}
	return cmp.Compare(len(a), len(b))
}
