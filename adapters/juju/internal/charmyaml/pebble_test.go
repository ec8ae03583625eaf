package charmyaml

import (
	"reflect"
	"testing"
	"unicode/utf8"
)

// pebblePlan is a plan as pebble v1.32 printed it (pebble plan), with the
// scalar styles yaml.v3 writes.
const pebblePlan = `services:
    app:
        summary: "123"
        description: |
            line one
            line two: with colon
        startup: enabled
        override: replace
        command: app --flag "quoted" 'single'
        after:
            - db
            - cache
        environment:
            -x: '- y'
            a:b: '#x'
            bool: "yes"
            D: "\x7F odd \N"
            E: ""
            nl: |
                x
            nl2: |+
                x

            "null": "null"
            keep: |-
                no break
            spc: ' '
            it's: 'it''s'
            tab: "a\tb"
        user-id: 1000
        backoff-factor: 1.5
        backoff-limit: 1m0s
log-targets:
    loki:
        services: []
        labels: {}
`

func TestParsePebblePlan(t *testing.T) {
	got, err := Parse([]byte(pebblePlan))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"services": map[string]any{"app": map[string]any{
			"summary": "123", "description": "line one\nline two: with colon\n", "startup": "enabled", "override": "replace",
			"command": `app --flag "quoted" 'single'`, "after": []any{"db", "cache"},
			"environment": map[string]any{
				"-x": "- y", "a:b": "#x", "bool": "yes", "D": "\x7f odd \u0085", "E": "", "nl": "x\n", "nl2": "x\n\n",
				"null": "null", "keep": "no break", "spc": " ", "it's": "it's", "tab": "a\tb",
			},
			"user-id": int64(1000), "backoff-factor": 1.5, "backoff-limit": "1m0s",
		}},
		"log-targets": map[string]any{"loki": map[string]any{"services": []any{}, "labels": map[string]any{}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
}

// TestMarshalRoundTrip: what Marshal writes, Parse reads back the same.
func TestMarshalRoundTrip(t *testing.T) {
	values := []any{
		map[string]any{},
		map[string]any{"a": "x", "b": map[string]any{"c": []any{"1", "two", "", " x ", "a: b", "- y", "#", "\x7f\u0085\u2028\ufffe", "line\nbreak\n"}}},
		map[string]any{"n": 3.5, "i": int64(-7), "t": true, "z": nil, "e": []any{}, "m": map[string]any{}, "null": "null", "key: odd": "v"},
		[]any{"a", map[string]any{}, []any{}},
	}
	for _, v := range values {
		text := Marshal(v)
		got, err := Parse([]byte(text))
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("%#v:\n%s\nread back %#v, %v", v, text, got, err)
		}
	}
}

// FuzzRoundTrip: any string, as a key and as a value, is written by
// Marshal and read back the same by Parse.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", " ", "a: b", "- x", "#", "null", "1", "\x7f", "\u0085", "line\n", "'\"\\", "\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // encoding/json writes U+FFFD for invalid UTF-8
		}
		v := map[string]any{s: s, "list": []any{s}}
		got, err := Parse([]byte(Marshal(v)))
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("%q: read back %#v, %v", s, got, err)
		}
	})
}
