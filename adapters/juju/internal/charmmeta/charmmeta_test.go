package charmmeta

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const charmcraft = `name: web
config:
  options:
    port: {type: int, default: 8080}
    name: {type: string, default: web}
    token: {type: secret}
actions:
  backup:
    params:
      target: {type: string, default: /srv/backup}
      level: {type: integer, minimum: 1, maximum: 9}
      mode: {type: string, enum: [full, quick], default: quick}
      opts:
        type: object
        properties:
          compress: {type: boolean, default: true}
      tags: {type: array, items: {type: string}}
      pair: {type: array, items: [{type: string}, {type: integer}]}
    required: [level]
    additionalProperties: false
  loose:
    params:
      n: {type: number}
`

// TestRead reads options and actions from charmcraft.yaml; config.yaml
// and actions.yaml take precedence when present.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "charmcraft.yaml"), []byte(charmcraft), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Option{"port": {"int", int64(8080)}, "name": {"string", "web"}, "token": {"secret", nil}}
	if !reflect.DeepEqual(c.Options, want) {
		t.Errorf("options %v, want %v", c.Options, want)
	}
	if len(c.Actions) != 2 || c.Actions["backup"].Schema["additionalProperties"] != false {
		t.Errorf("actions %v", c.Actions)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("options:\n  debug: {type: boolean, default: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = Read(dir); err != nil || len(c.Options) != 1 || c.Options["debug"].Default != false {
		t.Errorf("with config.yaml: %v, %v", c.Options, err)
	}
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("an empty directory reads")
	}
}

// TestParams fills defaults and validates as Juju does.
func TestParams(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "charmcraft.yaml"), []byte(charmcraft), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	backup := c.Actions["backup"]
	got, err := backup.Params(map[string]any{"level": json.Number("3"), "opts": map[string]any{}}, false)
	want := map[string]any{"level": json.Number("3"), "target": "/srv/backup", "mode": "quick", "opts": map[string]any{"compress": true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: %v, %v; want %v", got, err, want)
	}
	for _, tt := range []struct {
		params map[string]any
		strict bool
		want   string
	}{
		{map[string]any{"level": "3"}, false, "(root).level : Invalid type. Expected: integer, given: string"},
		{map[string]any{"level": 2.5}, false, "(root).level : Invalid type. Expected: integer, given: number"},
		{map[string]any{"level": 3.0, "extra": 1}, false, "(root) : Additional property extra is not allowed"},
		{map[string]any{}, false, "(root) : level is required"},
		{map[string]any{"level": 10}, false, "(root).level : Must be less than or equal to 9"},
		{map[string]any{"level": 1, "mode": "slow"}, false, `(root).mode : mode must be one of the following: "full", "quick"`},
		{map[string]any{"level": 1, "opts": map[string]any{"compress": "yes"}}, false, "(root).opts.compress : Invalid type. Expected: boolean, given: string"},
		{map[string]any{"level": 1, "tags": []any{"a", 2}}, false, "(root).tags.1 : Invalid type. Expected: string, given: integer"},
		{map[string]any{"level": 1, "pair": []any{"a", "b", 3}}, false, "(root).pair.1 : Invalid type. Expected: integer, given: string"},
	} {
		if _, err := backup.Params(tt.params, tt.strict); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.params, err, tt.want)
		}
	}
	if _, err := backup.Params(map[string]any{"level": 1, "tags": []any{"a", "b"}, "pair": []any{"a", 1, true}}, false); err != nil {
		t.Errorf("arrays whose items fit: %v", err)
	}
	loose := c.Actions["loose"]
	if _, err := loose.Params(map[string]any{"n": 1.5, "other": "x"}, false); err != nil {
		t.Errorf("Juju 3 allows undeclared parameters without additionalProperties: %v", err)
	}
	if _, err := loose.Params(map[string]any{"other": "x"}, true); err == nil || !strings.Contains(err.Error(), "Additional property other") {
		t.Errorf("Juju 4 refuses them: %v", err)
	}
}
