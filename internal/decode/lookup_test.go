package decode

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/opbus/opbus/internal/pathsyntax"
)

func parse(t *testing.T, s string) []pathsyntax.Segment {
	t.Helper()
	var out []pathsyntax.Segment
	p := pathsyntax.NewParser(s)
	for {
		seg, ok, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, seg)
	}
}

// TestLookup checks what Lookup finds and how each way of not finding it
// is reported: absent, a value of the wrong shape (with its path), or a
// wildcard, each where the walk stops.
func TestLookup(t *testing.T) {
	doc := map[string]any{
		"spec": map[string]any{"n": nil, "list": []any{map[string]any{"name": "a", "v": 1.0}}, "s": "x"},
	}
	tests := []struct {
		path, want string
		kind       string // "", "absent", "value", "wildcard"
		at         string // the path of a value error
	}{
		{"spec.list[name=a].v", "1", "", ""},
		{"spec.list[0].name", "a", "", ""},
		{"spec.n", "it is null", "absent", ""},
		{"spec.n.x", "spec.n is null", "absent", ""},
		{"spec.nope", `spec has no key "nope"`, "absent", ""},
		{"nope", `the document has no key "nope"`, "absent", ""},
		{"spec.list[3]", "spec.list has 1 elements", "absent", ""},
		{"spec.list[name=b]", "spec.list has no element with name=b", "absent", ""},
		{"spec.s.x", `want a map to look up "x" in (reading spec.s.x)`, "value", "spec.s"},
		{"spec.s[0]", "want a list to find [0] in (reading spec.s[0])", "value", "spec.s"},
		{"spec.list[*].v", "[*] stands for any number of values", "wildcard", ""},
		{"spec.nope[*]", `spec has no key "nope"`, "absent", ""},
	}
	for _, tc := range tests {
		v, err := Lookup(doc, parse(t, tc.path))
		var absent *Absent
		var verr *Error
		switch {
		case tc.kind == "" && (err != nil || fmt.Sprint(v) != tc.want):
			t.Errorf("%s: got %v, %v, want %s", tc.path, v, err, tc.want)
		case tc.kind == "absent" && (!errors.As(err, &absent) || absent.Why != tc.want):
			t.Errorf("%s: got %v, want absent: %s", tc.path, err, tc.want)
		case tc.kind == "value" && (!errors.As(err, &verr) || !strings.Contains(verr.Reason, tc.want) || Text(verr.Path) != tc.at):
			t.Errorf("%s: got %#v, want a value error at %s: %s", tc.path, err, tc.at, tc.want)
		case tc.kind == "wildcard" && (err == nil || errors.As(err, &absent) || errors.As(err, &verr) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %s", tc.path, err, tc.want)
		}
	}
}
