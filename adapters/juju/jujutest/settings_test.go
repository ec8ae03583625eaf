package jujutest

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"blank", " \n\t\n", map[string]string{}},
		{"empty JSON", "{}", map[string]string{}},
		{"JSON", `{"a": "1", "b": "x: y", "c": ""}`, map[string]string{"a": "1", "b": "x: y", "c": ""}},
		{"compact JSON", `{"a":"1","b":"\n\u00e9"}`, map[string]string{"a": "1", "b": "\né"}},
		{"JSON scalars", `{"n": 1.50, "t": true, "z": null}`, map[string]string{"n": "1.50", "t": "true", "z": ""}},
		{"YAML plain", "a: 1\nb: two words\nc:\n", map[string]string{"a": "1", "b": "two words", "c": ""}},
		{"YAML comments and document start", "---\n# comment\na: 1 # trailing\n\nb: x#y\n", map[string]string{"a": "1", "b": "x#y"}},
		{"YAML CRLF", "a: 1\r\nb: 2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"YAML nulls", "a: ~\nb: null\n", map[string]string{"a": "", "b": ""}},
		{"YAML single quotes", "a: 'it''s: here'\n'k y': 'v'\n", map[string]string{"a": "it's: here", "k y": "v"}},
		{"YAML double quotes", `a: "line\nnext \"q\" \\ \u00e9 \x41 \t"` + "\n" + `"k:": ""`,
			map[string]string{"a": "line\nnext \"q\" \\ é A \t", "k:": ""}},
		{"YAML value with colon", "url: http://x:80/a\n", map[string]string{"url": "http://x:80/a"}},
		{"YAML dotted and dashed keys", "a.b-c: 1\n", map[string]string{"a.b-c": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSettings([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseSettingsRejects(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"nested", "a:\n  b: 1\n", "line 2: indented"},
		{"list", "- a\n", "unsupported YAML"},
		{"flow map value", "a: {b: 1}\n", "unsupported YAML value"},
		{"flow list value", "a: [1, 2]\n", "unsupported YAML value"},
		{"block scalar", "a: |\n  text\n", "unsupported YAML value"},
		{"anchor", "a: &x 1\n", "unsupported YAML value"},
		{"no colon", "just text\n", `want "key: value"`},
		{"duplicate", "a: 1\na: 2\n", `duplicate key "a"`},
		{"unterminated", `a: "open` + "\n", "unterminated"},
		{"after quote", `a: "x" y` + "\n", `unexpected "y"`},
		{"bad escape", `a: "\q"`, `invalid escape`},
		{"short unicode escape", `a: "\u12"`, `invalid escape`},
		{"JSON nested", `{"a": {"b": "c"}}`, `value of key "a" is not a string`},
		{"JSON list", `{"a": [1]}`, `value of key "a" is not a string`},
		{"JSON trailing", `{"a": "1"} {}`, "after the JSON object"},
		{"JSON broken", `{"a": `, "unexpected EOF"},
		{"invalid UTF-8", "a: \xff\n", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSettings([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
}
