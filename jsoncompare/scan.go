package jsoncompare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxJSONDepth is encoding/json's nesting limit, kept so that a text
// Compare takes is one encoding/json would decode.
const maxJSONDepth = 10000

// A jsonDoc is one side of a Compare: its bytes and the name errors
// give it ("old", "new").
type jsonDoc struct {
	data []byte
	side string

	// ends, when not nil, records where each container checked so far
	// ends, in the order they start: a container checked once is then
	// skipped in O(log n), so a change nested deep in a document costs one
	// read of it, not one per level. late holds those checked out of that
	// order (a member taken as the other side's bytes, read later).
	ends *[]extent
	late *map[int]int
}

// extent is where a container starts and ends.
type extent struct{ start, end int }

// Places open returns besides an index into ends.
const (
	noted     = -1 // t records nothing
	notedLate = -2 // the container goes into t.late
)

// open notes a container starting at i and returns where it is noted.
func (t *jsonDoc) open(i int) int {
	if t.ends == nil {
		return noted
	}
	e := *t.ends
	if len(e) > 0 && e[len(e)-1].start >= i {
		return notedLate
	}
	*t.ends = append(e, extent{start: i, end: -1})
	return len(e)
}

// close notes that the container opened at start, noted at k, ends at end.
func (t *jsonDoc) close(k, start, end int) {
	switch {
	case k >= 0:
		(*t.ends)[k].end = end
	case k == notedLate:
		if *t.late == nil {
			*t.late = map[int]int{}
		}
		(*t.late)[start] = end
	}
}

// skip returns the index past the value at i, checked before when it is a
// container t knows, or checked now.
func (t *jsonDoc) skip(i, depth int) (int, error) {
	if t.ends != nil && i < len(t.data) && (t.data[i] == '{' || t.data[i] == '[') {
		e := *t.ends
		k, found := slices.BinarySearchFunc(e, i, func(x extent, i int) int { return cmp.Compare(x.start, i) })
		if found && e[k].end >= 0 {
			return e[k].end, nil
		}
		if end, ok := (*t.late)[i]; ok {
			return end, nil
		}
	}
	return t.value(i, depth)
}

// String classes, one per byte: most bytes of a JSON text are inside
// strings, so the scanner settles each one with a table lookup.
const (
	strPlain   = iota // ASCII that stands for itself
	strHigh           // a byte of a multi-byte UTF-8 sequence (or invalid UTF-8)
	strQuote          // the closing quote
	strEscape         // a backslash
	strControl        // a control character, which must be escaped
)

var strClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c < 0x20:
			t[c] = strControl
		case c == '"':
			t[c] = strQuote
		case c == '\\':
			t[c] = strEscape
		case c >= 0x80:
			t[c] = strHigh
		}
	}
	return t
}()

// errorAt reports a syntax error at byte i, naming the side.
func (t *jsonDoc) errorAt(i int, what string) error {
	if i >= len(t.data) {
		return fmt.Errorf("jsoncompare: %s JSON: unexpected end of input at byte %d: %s", t.side, len(t.data), what)
	}
	return fmt.Errorf("jsoncompare: %s JSON: invalid character %q at byte %d: %s", t.side, t.data[i], i, what)
}

// space returns the index of the first non-whitespace byte at or after i.
func (t *jsonDoc) space(i int) int {
	d := t.data
	for i < len(d) {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// document checks that data holds one JSON value and nothing but whitespace
// around it, and returns where the value starts and ends.
func (t *jsonDoc) document() (start, end int, err error) {
	start = t.space(0)
	if end, err = t.value(start, 0); err != nil {
		return 0, 0, err
	}
	if i := t.space(end); i < len(t.data) {
		return 0, 0, t.errorAt(i, "want the end of the document after its value")
	}
	return start, end, nil
}

// value checks the value that starts at i and returns the index past it.
func (t *jsonDoc) value(i, depth int) (int, error) {
	d := t.data
	if i >= len(d) {
		return i, t.errorAt(i, "want a value")
	}
	switch c := d[i]; {
	case c == '"':
		end, _, err := t.str(i)
		return end, err
	case c == '{':
		return t.object(i, depth+1)
	case c == '[':
		return t.array(i, depth+1)
	case c == '-' || c >= '0' && c <= '9':
		return t.number(i)
	case c == 't':
		return t.literal(i, "true")
	case c == 'f':
		return t.literal(i, "false")
	case c == 'n':
		return t.literal(i, "null")
	}
	return i, t.errorAt(i, "want a value")
}

func (t *jsonDoc) literal(i int, lit string) (int, error) {
	d := t.data
	for k := 0; k < len(lit); k++ {
		if i+k >= len(d) || d[i+k] != lit[k] {
			return i, t.errorAt(i+k, "want "+lit)
		}
	}
	return i + len(lit), nil
}

// str checks the string whose opening quote is at i and returns the index
// past its closing quote; hard reports an escape or a non-ASCII byte, which
// make its decoded form differ from its bytes.
func (t *jsonDoc) str(i int) (end int, hard bool, err error) {
	d := t.data
	for j := i + 1; j < len(d); {
		switch strClass[d[j]] {
		case strPlain:
			j++
		case strQuote:
			return j + 1, hard, nil
		case strHigh:
			hard = true
			j++
		case strEscape:
			hard = true
			if j+1 >= len(d) {
				return j, hard, t.errorAt(j+1, "want an escape after a backslash")
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= len(d) || !isHex(d[k]) {
						return k, hard, t.errorAt(k, `want 4 hexadecimal digits after \u`)
					}
				}
				j += 6
			default:
				return j, hard, t.errorAt(j+1, "want an escape after a backslash")
			}
		default:
			return j, hard, t.errorAt(j, "control characters must be escaped in a string")
		}
	}
	return len(d), hard, t.errorAt(len(d), "want the end of a string")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number checks the number that starts at i, by JSON's grammar.
func (t *jsonDoc) number(i int) (int, error) {
	d := t.data
	j := i
	if d[j] == '-' {
		j++
	}
	switch {
	case j < len(d) && d[j] == '0':
		j++
	case j < len(d) && d[j] >= '1' && d[j] <= '9':
		for j++; j < len(d) && isDigit(d[j]); j++ {
		}
	default:
		return j, t.errorAt(j, "want a digit in a number")
	}
	if j < len(d) && d[j] == '.' {
		j++
		if j >= len(d) || !isDigit(d[j]) {
			return j, t.errorAt(j, "want a digit after a decimal point")
		}
		for ; j < len(d) && isDigit(d[j]); j++ {
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if j >= len(d) || !isDigit(d[j]) {
			return j, t.errorAt(j, "want a digit in an exponent")
		}
		for ; j < len(d) && isDigit(d[j]); j++ {
		}
	}
	return j, nil
}

func (t *jsonDoc) object(i, depth int) (end int, err error) {
	if depth > maxJSONDepth {
		return i, t.errorAt(i, "nested past 10000 levels")
	}
	k := t.open(i)
	defer func() {
		if err == nil {
			t.close(k, i, end)
		}
	}()
	d := t.data
	j := t.space(i + 1)
	if j < len(d) && d[j] == '}' {
		return j + 1, nil
	}
	for {
		if j >= len(d) || d[j] != '"' {
			return j, t.errorAt(j, "want a string key in an object")
		}
		end, _, err := t.str(j)
		if err != nil {
			return end, err
		}
		if j = t.space(end); j >= len(d) || d[j] != ':' {
			return j, t.errorAt(j, "want ':' after an object key")
		}
		if j, err = t.value(t.space(j+1), depth); err != nil {
			return j, err
		}
		if j = t.space(j); j < len(d) && d[j] == ',' {
			j = t.space(j + 1)
			continue
		}
		if j < len(d) && d[j] == '}' {
			return j + 1, nil
		}
		return j, t.errorAt(j, "want ',' or '}' after an object member")
	}
}

func (t *jsonDoc) array(i, depth int) (end int, err error) {
	if depth > maxJSONDepth {
		return i, t.errorAt(i, "nested past 10000 levels")
	}
	k := t.open(i)
	defer func() {
		if err == nil {
			t.close(k, i, end)
		}
	}()
	d := t.data
	j := t.space(i + 1)
	if j < len(d) && d[j] == ']' {
		return j + 1, nil
	}
	for {
		var err error
		if j, err = t.value(j, depth); err != nil {
			return j, err
		}
		if j = t.space(j); j < len(d) && d[j] == ',' {
			j = t.space(j + 1)
			continue
		}
		if j < len(d) && d[j] == ']' {
			return j + 1, nil
		}
		return j, t.errorAt(j, "want ',' or ']' after an array element")
	}
}

// decodeText returns the value of the checked text d[i:], as the bus's
// documents hold it: maps, lists, strings, bools, nil, and numbers as
// [opbus.Document] makes them (int64, uint64 past its range, a json.Number for a
// longer integer, else float64, else a json.Number); and the index past it.
func decodeText(d []byte, i int) (any, int) {
	t := jsonDoc{data: d}
	switch c := d[i]; {
	case c == '"':
		end, hard, _ := t.str(i)
		return decodeString(d[i:end], hard), end
	case c == '{':
		m := map[string]any{}
		j := t.space(i + 1)
		if d[j] == '}' {
			return m, j + 1
		}
		for {
			end, hard, _ := t.str(j)
			k := decodeString(d[j:end], hard)
			var v any
			v, j = decodeText(d, t.space(t.space(end)+1))
			m[k] = v // a repeated key: the last one wins, as in encoding/json
			if j = t.space(j); d[j] == '}' {
				return m, j + 1
			}
			j = t.space(j + 1)
		}
	case c == '[':
		l := []any{}
		j := t.space(i + 1)
		if d[j] == ']' {
			return l, j + 1
		}
		for {
			var v any
			v, j = decodeText(d, j)
			l = append(l, v)
			if j = t.space(j); d[j] == ']' {
				return l, j + 1
			}
			j = t.space(j + 1)
		}
	case c == 't':
		return true, i + 4
	case c == 'f':
		return false, i + 5
	case c == 'n':
		return nil, i + 4
	}
	end, _ := t.number(i)
	return decodeNumber(d[i:end]), end
}

// decodeString returns the string of the checked literal q, quotes
// included. One with escapes or non-ASCII bytes goes through encoding/json,
// which replaces invalid UTF-8 and lone surrogates with U+FFFD.
func decodeString(q []byte, hard bool) string {
	if !hard {
		return string(q[1 : len(q)-1])
	}
	var s string
	_ = json.Unmarshal(q, &s) // checked already
	return s
}

// decodeNumber converts a checked number as [opbus.Document] does.
func decodeNumber(n []byte) any {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return u
	}
	if isInteger(s) {
		return json.Number(s)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return json.Number(s)
}

// isInteger reports whether s, a checked JSON number, is an integer: no
// fraction and no exponent.
func isInteger(s string) bool {
	return !strings.ContainsAny(s, ".eE")
}
