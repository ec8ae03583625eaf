package opbus

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus/internal/pathsyntax"
)

// pathChars are the pieces hand-built keys and values are made of: the
// bytes the path syntax gives a meaning to, white space, escapes, UTF-8
// and a byte that is not UTF-8.
var pathChars = []string{"a", "Z", "0", "7", "-", "_", ".", "[", "]", `"`, `\`, "=", "*", "$", "/", " ", "\t", "\n", "é", "\xff", "x y"}

func randomPathText(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(4); n > 0; n-- {
		b.WriteString(pathChars[r.IntN(len(pathChars))])
	}
	return b.String()
}

// randomSegment builds a segment as a user can: MapKey, ListIndex (with
// any int, negative ones included), [*], or a match literal with any field
// and value. built is false when building it was refused (a panic).
func randomSegment(r *rand.Rand) (s Segment, built bool) {
	defer func() {
		if recover() != nil {
			built = false
		}
	}()
	switch r.IntN(4) {
	case 0:
		return MapKey(randomPathText(r)), true
	case 1:
		i := r.IntN(20) - 5
		if r.IntN(10) == 0 {
			i = int(r.Int64())
		}
		return ListIndex(i), true
	case 2:
		return Segment{Kind: SegAny}, true
	}
	return Segment{Kind: SegMatch, Key: randomPathText(r), Value: randomPathText(r)}, true
}

// TestPathStringRoundTrips: every path that can be built (MapKey,
// ListIndex, [*] and match segments, with any key, field and value)
// prints as text ParsePath reads back as the same path, or building it
// was refused. (A match field with a space, or empty, and ListIndex(-1)
// once printed as text ParsePath refuses.)
func TestPathStringRoundTrips(t *testing.T) {
	for _, tt := range []Path{
		{MapKey("a"), {Kind: SegMatch, Key: "a b", Value: "v"}},
		{MapKey("a"), {Kind: SegMatch, Key: "", Value: "v"}},
		{MapKey("a"), {Kind: SegMatch, Key: "k", Value: ""}},
		{MapKey("a"), {Kind: SegMatch, Key: "*", Value: "v"}},
		{MapKey("a"), {Kind: SegMatch, Key: "a=b", Value: "=v"}},
		{{Kind: SegMatch, Key: `"q"`, Value: "v"}},
		{MapKey("$x"), MapKey("/y")},
	} {
		checkPathRoundTrip(t, "", tt)
	}
	for _, seed := range []uint64{1, uint64(time.Now().UnixNano())} {
		r := rand.New(rand.NewPCG(seed, seed))
		for range 10000 {
			var p Path
			ok := true
			for n := 1 + r.IntN(4); n > 0 && ok; n-- {
				var s Segment
				s, ok = randomSegment(r)
				p = append(p, s)
			}
			if ok {
				checkPathRoundTrip(t, fmt.Sprintf("seed %d: ", seed), p)
			}
		}
	}
}

func checkPathRoundTrip(t *testing.T, seed string, p Path) {
	t.Helper()
	q, err := ParsePath(p.String())
	if err != nil {
		t.Fatalf("%s%#v prints as %s, which ParsePath refuses: %v", seed, p, p.String(), err)
	}
	if !q.Equal(p) {
		t.Fatalf("%s%#v prints as %s, which ParsePath reads as %#v", seed, p, p.String(), q)
	}
}

// TestListIndexNegative: a negative index addresses no element and no
// path text names one, so ListIndex refuses it, naming the index.
func TestListIndexNegative(t *testing.T) {
	defer func() {
		got := fmt.Sprint(recover())
		if want := "opbus: ListIndex(-1): expected a non-negative index"; got != want {
			t.Errorf("ListIndex(-1) panicked with %q, want %q", got, want)
		}
	}()
	ListIndex(-1)
}

// TestSegmentKindsAreSyntaxKinds checks that the public segment kinds are
// numbered as internal/pathsyntax numbers its own, which ParsePath and
// Path.String convert by number.
func TestSegmentKindsAreSyntaxKinds(t *testing.T) {
	for k, want := range map[SegmentKind]pathsyntax.Kind{SegKey: pathsyntax.Key, SegIndex: pathsyntax.Index, SegAny: pathsyntax.Any, SegMatch: pathsyntax.Match} {
		if uint8(k) != uint8(want) {
			t.Errorf("segment kind %d is pathsyntax kind %d", k, want)
		}
	}
}
