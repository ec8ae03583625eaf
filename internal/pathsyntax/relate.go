package pathsyntax

import (
	"cmp"
	"strings"
)

// The relations between segments that paths are compared and matched by.
// Each looks at one segment of each path, so that a caller holding paths
// of its own segment type converts segment by segment, allocating nothing.

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

// MaySame reports whether segments a and b may address the same child in
// some value, each standing for the child it names in that value. A map
// key is told apart from a list element (a value that turns from map to
// list, or back, is a change at its parent); [Any] may be either. A list
// element named by position and one named by a field may be the same, and
// so may two elements named by different fields; two elements named by
// the same field are the same only with the same value.
func MaySame(a, b Segment) bool {
	if a.Kind == Any || b.Kind == Any {
		return true // [*] stands for map keys as well as list elements
	}
	if a.Kind == Key || b.Kind == Key {
		return a.Kind == b.Kind && a.Key == b.Key
	}
	switch {
	case a.Kind == Index && b.Kind == Index:
		return a.Index == b.Index
	case a.Kind == Match && b.Kind == Match && a.Key == b.Key:
		return a.Value == b.Value
	}
	return true // index against field, or fields that differ
}

// Compare orders segments as diffs are ordered: by kind (key, index, any,
// match), then keys in byte order, indexes by number, matches by field and
// then value. It is 0 only for equal segments.
func Compare(a, b Segment) int {
	if a.Kind != b.Kind {
		return cmp.Compare(a.Kind, b.Kind)
	}
	switch a.Kind {
	case Index:
		return cmp.Compare(a.Index, b.Index)
	case Match:
		if r := strings.Compare(a.Key, b.Key); r != 0 {
			return r
		}
		return strings.Compare(a.Value, b.Value)
	}
	return strings.Compare(a.Key, b.Key)
}
