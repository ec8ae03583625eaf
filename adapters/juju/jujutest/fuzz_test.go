package jujutest

import (
	"encoding/json"
	"maps"
	"testing"
)

// FuzzSettings: what state-set and relation-set read from stdin (JSON or
// the documented YAML subset) parses to a map or an error, never a panic,
// and a parsed map written as JSON parses back to itself.
func FuzzSettings(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, "a: b\nc: 'd e'\n", `{"a": 1}`, "k: \"x\\ny\"", "- list", "{}", "a:", `{"a":"b"} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseSettings(data)
		if err != nil {
			return
		}
		js, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseSettings(js)
		if err != nil || !maps.Equal(m, again) {
			t.Fatalf("%q parsed to %v; its JSON %s parsed to %v, %v", data, m, js, again, err)
		}
	})
}
