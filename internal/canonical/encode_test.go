package canonical

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/opbus/opbus/internal/jsondiff"
	"github.com/opbus/opbus/internal/pathsyntax"
)

func encode(t *testing.T, p *jsondiff.Patterns, v any) []byte {
	t.Helper()
	var e Encoder
	e.Reset(p)
	if err := e.Value(v, p.All(), ""); err != nil {
		t.Fatal(err)
	}
	return e.Buf
}

// TestEncodingNormalises checks that what compares equal encodes alike:
// numbers of any Go type, maps in any order, keyed lists in any order;
// and that ignored content is left out.
func TestEncodingNormalises(t *testing.T) {
	p := jsondiff.NewPatterns([]jsondiff.Pattern{{Path: []pathsyntax.Segment{{Kind: pathsyntax.Key, Key: "skip"}}, Ignore: true}},
		map[string]string{"l": "name"})
	a := map[string]any{"n": 3, "l": []any{map[string]any{"name": "x"}, map[string]any{"name": "y"}}, "skip": 1}
	b := map[string]any{"n": json.Number("3"), "l": []any{map[string]any{"name": "y"}, map[string]any{"name": "x"}}}
	if ea, eb := encode(t, &p, a), encode(t, &p, b); !bytes.Equal(ea, eb) {
		t.Errorf("equal values encode apart:\n%q\n%q", ea, eb)
	}
	if bytes.Equal(encode(t, &p, map[string]any{"n": 3.5}), encode(t, &p, map[string]any{"n": 3})) {
		t.Error("3.5 and 3 encode alike")
	}
}

// TestEncodingRejectsWhatIsNotCanonical checks the error of a bad value.
func TestEncodingRejectsWhatIsNotCanonical(t *testing.T) {
	var e Encoder
	var p jsondiff.Patterns
	e.Reset(&p)
	err := e.Value(map[string]any{"c": make(chan int)}, 0, "")
	if e, ok := err.(*Error); !ok || len(e.Path) != 1 || e.Path[0].Key != "c" {
		t.Errorf("got %v, want an *Error at c", err)
	}
}
