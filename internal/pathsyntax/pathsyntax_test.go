package pathsyntax

import (
	"errors"
	"strings"
	"testing"
)

// TestRoundTrip checks the printer's invariant: what Write writes, Next
// reads back as the same segments.
func TestRoundTrip(t *testing.T) {
	for _, segs := range [][]Segment{
		{{Kind: Key, Key: "status"}, {Kind: Key, Key: "phase"}},
		{{Kind: Key, Key: "$x"}, {Kind: Key, Key: "/y"}},
		{{Kind: Key, Key: ""}, {Kind: Index, Index: 0}},
		{{Kind: Key, Key: "a b"}, {Kind: Any}, {Kind: Match, Key: "*n=", Value: " v "}},
		{{Kind: Key, Key: "l"}, {Kind: Match, Key: "name", Value: ""}, {Kind: Match, Key: "k", Value: "=x"}},
	} {
		var b strings.Builder
		for i, s := range segs {
			Write(&b, s.Kind, s.Key, s.Value, s.Index, i == 0)
		}
		p := NewParser(b.String())
		for i := 0; ; i++ {
			s, ok, err := p.Next()
			if err != nil {
				t.Fatalf("%q: %v", b.String(), err)
			}
			if !ok {
				if i != len(segs) {
					t.Errorf("%q: read %d segments, want %d", b.String(), i, len(segs))
				}
				break
			}
			if i >= len(segs) || s != segs[i] {
				t.Errorf("%q: segment %d is %+v, want one of %+v", b.String(), i, s, segs)
			}
		}
	}
}

// TestErrorsSayWhere checks that a bad path is an *Error with the offset
// of what is wrong.
func TestErrorsSayWhere(t *testing.T) {
	for in, off := range map[string]int{"": 0, "a..b": 2, "a[": 1, "a[x]": 3, "$.a": 0, "a[k==v]": 3} {
		p := NewParser(in)
		var err error
		for ok := true; ok && err == nil; {
			_, ok, err = p.Next()
		}
		var e *Error
		if !errors.As(err, &e) || e.Offset != off {
			t.Errorf("%q: got %v, want an error at offset %d", in, err, off)
		}
	}
}

// TestCloneIsACopy: an error keeps a path its walk goes on changing, so
// Clone copies; the root is nil.
func TestCloneIsACopy(t *testing.T) {
	if got := Clone([]Segment{}); got != nil {
		t.Errorf("Clone of no segments: got %#v, want nil", got)
	}
	p := []Segment{{Kind: Key, Key: "a"}, {Kind: Index, Index: 1}}
	c := Clone(p)
	p[0].Key = "b"
	if len(c) != 2 || c[0].Key != "a" || c[1].Index != 1 {
		t.Errorf("Clone: got %v, want a copy of [a [1]]", c)
	}
}

// TestRelations checks Matches, MaySame and Compare on every pair of a
// set of segments: a match may be the same, MaySame is symmetric, and
// Compare is an order that is 0 only for equal segments.
func TestRelations(t *testing.T) {
	segs := []Segment{{Kind: Key, Key: "a"}, {Kind: Key, Key: "b"}, {Kind: Key}, {Kind: Index}, {Kind: Index, Index: 2},
		{Kind: Any}, {Kind: Match, Key: "name", Value: "x"}, {Kind: Match, Key: "name", Value: "y"}, {Kind: Match, Key: "id", Value: "x"}}
	for _, a := range segs {
		for _, b := range segs {
			if b.Kind != Any && Matches(a, b) && !MaySame(a, b) {
				t.Errorf("%v matches %v, but MaySame says they cannot be the same", a, b)
			}
			if MaySame(a, b) != MaySame(b, a) {
				t.Errorf("MaySame(%v, %v) != MaySame(%v, %v)", a, b, b, a)
			}
			if c := Compare(a, b); c != -Compare(b, a) || (c == 0) != (a == b) {
				t.Errorf("Compare(%v, %v) = %d, Compare(%v, %v) = %d", a, b, c, b, a, Compare(b, a))
			}
		}
	}
	want := map[[2]int]bool{{0, 1}: false, {0, 3}: false, {3, 4}: false, {3, 6}: true, {6, 7}: false, {6, 8}: true, {0, 5}: true}
	for ij, w := range want {
		if got := MaySame(segs[ij[0]], segs[ij[1]]); got != w {
			t.Errorf("MaySame(%v, %v) = %v, want %v", segs[ij[0]], segs[ij[1]], got, w)
		}
	}
	if Compare(segs[0], segs[3]) >= 0 || Compare(segs[3], segs[4]) >= 0 || Compare(segs[8], segs[6]) >= 0 || Compare(segs[6], segs[7]) >= 0 {
		t.Error("Compare: want keys before indexes, indexes by number, matches by field then value")
	}
}
