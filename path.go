package opbus

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/opbus/opbus/internal/pathsyntax"
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
	p, err := parseSegments(s)
	if err != nil {
		return nil, err
	}
	return pathOf(p), nil
}

// parseSegments is ParsePath in the segments of the path syntax.
func parseSegments(s string) ([]pathsyntax.Segment, error) {
	var out []pathsyntax.Segment
	p := pathsyntax.NewParser(s)
	for {
		seg, ok, err := p.Next()
		if err != nil {
			e := err.(*pathsyntax.Error)
			return nil, &PathError{Path: s, Offset: e.Offset, Err: e.Err}
		}
		if !ok {
			return out, nil
		}
		out = append(out, seg)
	}
}

// fromSyntax returns the segment s of the path syntax as a Segment.
func fromSyntax(s pathsyntax.Segment) Segment {
	return Segment{Kind: SegmentKind(s.Kind), Key: s.Key, Value: s.Value, Index: s.Index}
}

// syntax returns s as a segment of the path syntax.
func (s Segment) syntax() pathsyntax.Segment {
	return pathsyntax.Segment{Kind: pathsyntax.Kind(s.Kind), Key: s.Key, Value: s.Value, Index: s.Index}
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
	pathsyntax.Write(b, pathsyntax.Kind(s.Kind), s.Key, s.Value, s.Index, first)
}

// Equal reports whether p and q have the same segments.
func (p Path) Equal(q Path) bool { return slices.Equal(p, q) }

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
	return pathsyntax.Matches(s.syntax(), c.syntax())
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
