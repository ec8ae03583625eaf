package pathsyntax

import (
	"strconv"
	"strings"
)

// Write appends the text of the segment kind/key/value/index to b, as it
// appears inside a path: first says whether it is the path's first
// segment (a key then has no leading dot). It takes the segment's fields
// rather than a [Segment] so that callers holding segments of another
// struct type print them without converting.
func Write(b *strings.Builder, kind Kind, key, value string, index int, first bool) {
	switch kind {
	case Key:
		// A path starting with '$' or '/' reads as JSONPath or a JSON
		// Pointer (the parser refuses it): such a first key is quoted.
		if plainKey(key) && !(first && (key[0] == '$' || key[0] == '/')) {
			if !first {
				b.WriteByte('.')
			}
			b.WriteString(key)
			return
		}
		b.WriteByte('[')
		b.WriteString(strconv.Quote(key))
		b.WriteByte(']')
	case Index:
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(index))
		b.WriteByte(']')
	case Any:
		b.WriteString("[*]")
	case Match:
		b.WriteByte('[')
		if plainField(key) {
			b.WriteString(key)
		} else {
			b.WriteString(strconv.Quote(key))
		}
		b.WriteByte('=')
		if plainValue(value) {
			b.WriteString(value)
		} else {
			b.WriteString(strconv.Quote(value))
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
// the parser reads "[*" as a wildcard, and a field ends at its first '='.
func plainField(k string) bool {
	return plainKey(k) && k[0] != '*' && !strings.Contains(k, "=")
}

func plainValue(v string) bool {
	if v == "" || strings.TrimSpace(v) != v || v[0] == '=' { // [k==…] reads as a mistake
		return false
	}
	return !strings.ContainsAny(v, "[]\"")
}

// Matches reports whether the pattern segment s matches the concrete
// segment c: [Any] matches anything, every other kind the same segment.
func Matches(s, c Segment) bool {
	switch s.Kind {
	case Any:
		return true
	case Key:
		return c.Kind == Key && c.Key == s.Key
	case Index:
		return c.Kind == Index && c.Index == s.Index
	case Match:
		return c.Kind == Match && c.Key == s.Key && c.Value == s.Value
	}
	return false
}
