package jujutest

import (
	"context"
	"maps"
	"testing"
	"unicode/utf8"

	"github.com/opbus/opbus/adapters/juju"
)

// FuzzSettings: what state-set and relation-set read from stdin (JSON or
// the documented YAML subset) parses to a map or an error, never a panic,
// and a parsed map written by the adapter's state-set (JSON escaped so
// that YAML takes it) parses back to itself.
func FuzzSettings(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, "a: b\nc: 'd e'\n", `{"a": 1}`, "k: \"x\\ny\"", "- list", "{}", "a:", `{"a":"b"} x`,
		`{"a":"\u007f\u0085\ufffe"}`, "k: \"\\x9f\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseSettings(data)
		if err != nil {
			return
		}
		if _, empty := m[""]; empty || len(m) == 0 {
			return // state-set refuses an empty key; nothing to write
		}
		for k, v := range m {
			if len(k) > juju.MaxStateKey || len(v) > juju.MaxStateValue {
				return // over Juju's limits, which state-set refuses
			}
		}
		model := &Model{Unit: "app/0"}
		if err := (juju.Tools{Runner: NewRunner(model)}).StateSet(context.Background(), m); err != nil {
			t.Fatalf("%q parsed to %q, which state-set fails to write: %v", data, m, err)
		}
		if got := model.Staged.State; !maps.Equal(m, got) {
			t.Fatalf("%q parsed to %q; written with state-set it reads back as %q", data, m, got)
		}
	})
}

// FuzzSecretContent: any UTF-8 content written with the adapter's
// secret-add reads back unchanged with its secret-get, through the content
// file and the fake's parsing.
func FuzzSecretContent(f *testing.F) {
	for _, s := range []string{"s3cret", "", "a\nb", "\x00\x7f\u0085\ufffe", `{"x": "y"}`, "#base64=", "- [a]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		if !utf8.ValidString(value) {
			return // JSON, as secret-get prints it, carries UTF-8 only
		}
		model := &Model{Unit: "app/0", Leader: true}
		tools := juju.Tools{Runner: NewRunner(model)}
		ctx := context.Background()
		id, err := tools.SecretAdd(ctx, juju.SecretContent{"value": value}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tools.SecretGet(ctx, id, nil)
		if err != nil || got["value"] != value || len(got) != 1 {
			t.Fatalf("content %q read back as %q, %v", value, got["value"], err)
		}
	})
}
