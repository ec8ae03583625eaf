package charmyaml

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParse reads what charms' config.yaml, actions.yaml and
// charmcraft.yaml hold into the values encoding/json would give.
func TestParse(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"config", `
# comment
options:
  port:
    type: int
    default: 8080   # the web port
    description: |
      The port.
      Second line.
  ratio: {type: float, default: 0.5}
  name:
    type: string
    default: "web app"
    description: >-
      Folded
      text.

      New paragraph.
  enabled: {type: boolean, default: true}
  empty:
    type: string
  quoted: {type: string, default: 'it''s'}
`, `{"options":{"empty":{"type":"string"},"enabled":{"default":true,"type":"boolean"},"name":{"default":"web app","description":"Folded text.\nNew paragraph.","type":"string"},"port":{"default":8080,"description":"The port.\nSecond line.\n","type":"int"},"quoted":{"default":"it's","type":"string"},"ratio":{"default":0.5,"type":"float"}}}`},
		{"actions", `---
snapshot:
  description: Take a snapshot
    of the database.
  params:
    filename:
      type: string
    compression:
      type: object
      properties:
        kind:
          type: string
          enum:
          - gzip
          - xz
          default: gzip
        quality: {type: integer, default: 5, minimum: 0, maximum: 9}
  required: [filename]
  additionalProperties: false
list:
  params:
    items:
      type: array
      default: [a, "b", 3]
      items:
        - type: string
`, `{"list":{"params":{"items":{"default":["a","b",3],"items":[{"type":"string"}],"type":"array"}}},"snapshot":{"additionalProperties":false,"description":"Take a snapshot of the database.","params":{"compression":{"properties":{"kind":{"default":"gzip","enum":["gzip","xz"],"type":"string"},"quality":{"default":5,"maximum":9,"minimum":0,"type":"integer"}},"type":"object"},"filename":{"type":"string"}},"required":["filename"]}}`},
		{"scalars", `a: 0x1F
b: 0o17
c: -12
d: 1e3
e: .5
f: ~
g: "tab\there \u00e9"
h: 1.2.3
i: 007
j: True
k: null
l: [ ]
m: {}
n: "x # not a comment"
o: 9007199254740993
`, `{"a":31,"b":15,"c":-12,"d":1000,"e":0.5,"f":null,"g":"tab\there é","h":"1.2.3","i":7,"j":true,"k":null,"l":[],"m":{},"n":"x # not a comment","o":9007199254740993}`},
		{"multi-line flow", "a: [one,\n  two]\nb: 1\n", `{"a":["one","two"],"b":1}`},
		{"literal keep", "a: |+\n  x\n\nb: 1\n", `{"a":"x\n\n","b":1}`},
		{"empty", "# nothing\n", `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// Integers stay exact.
	v, _ := Parse([]byte("o: 9007199254740993\n"))
	if n := v.(map[string]any)["o"]; n != int64(9007199254740993) {
		t.Errorf("o = %v (%T)", n, n)
	}
}

// TestParseErrors: what it does not read is an error naming the line.
func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"a: &x 1\n":           "line 1: unsupported YAML",
		"a: *x\n":             "line 1: unsupported YAML",
		"a: !!str 1\n":        "line 1: unsupported YAML",
		"a: 1\na: 2\n":        `line 2: duplicate key "a"`,
		"a:\n  b: 1\n c: 2\n": "line 3",
		"a: \"open\n":         "line 1: unterminated",
		"a: 1\n---\nb: 2\n":   "line 2",
		"a: [1, 2\n":          "line 1",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want an error with %q", in, err, want)
		}
	}
}

// FuzzParse: any input parses or fails with an error, never a panic, and
// what parses encodes as JSON.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a: 1\n", "- a\n- b: [1, {c: d}]\n", "a: |-\n  x\n b\n", "a: \"\\u00e9\"\n", "a:\n- - x\n", "? a\n", "a: [\n", "{a: 1}", "|\n", "-\n-\n", "a: 'x''y' # c\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse([]byte(s))
		if err != nil {
			return
		}
		if _, err := json.Marshal(v); err != nil && !strings.Contains(err.Error(), "unsupported value") {
			t.Errorf("Parse(%q) = %#v, which does not encode: %v", s, v, err)
		}
	})
}
