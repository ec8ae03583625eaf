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
