package juju_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// loadCharm writes a charm directory with options and an action, with
// defaults.
func loadCharm(t *testing.T) string {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"metadata.yaml": "name: web\n",
		"config.yaml":   "options:\n  port: {type: int, default: 8080}\n  log-level: {type: string, default: info}\n  ratio: {type: float}\n  debug: {type: boolean, default: false}\n",
		"actions.yaml":  "backup:\n  params:\n    target: {type: string, default: /srv}\n    level: {type: integer, default: 3}\n    opts:\n      type: object\n      properties:\n        compress: {type: boolean, default: true}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type webConfig struct {
	Port     int
	LogLevel string
	Ratio    *float64
	Debug    bool   `juju:"debug"`
	Ignored  string `juju:"-"`
}

// TestLoadConfig decodes config into a struct: values set over the
// metadata's defaults, an unset option without default left nil, and a
// value that does not fit its field an error naming the option.
func TestLoadConfig(t *testing.T) {
	var got webConfig
	var loadErr error
	h := &jujutest.Harness{CharmDir: loadCharm(t), Setup: func(b *opbus.Bus) error {
		return b.Handle("config", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			got, loadErr = juju.LoadConfig[webConfig](ctx, ev)
			return opbus.Status{}, nil
		}, opbus.On{Fields: []string{"config"}})
	}}
	m := &jujutest.Model{Unit: "web/0", Config: map[string]any{"port": 8081.0}}
	if _, err := h.Run(context.Background(), "config-changed", m); err != nil || loadErr != nil {
		t.Fatalf("%v, %v", err, loadErr)
	}
	if got.Port != 8081 || got.LogLevel != "info" || got.Ratio != nil || got.Debug {
		t.Errorf("config %+v", got)
	}
	m.Config = map[string]any{"port": "eighty", "ratio": 0.25, "log-level": "debug"}
	if _, err := h.Run(context.Background(), "config-changed", m); err != nil {
		t.Fatal(err)
	}
	if loadErr == nil || !strings.Contains(loadErr.Error(), `juju: config option "port": want an integer that fits int, got a string (for webConfig.Port)`) {
		t.Errorf("port of the wrong type: %v", loadErr)
	}
	if got.Ratio == nil || *got.Ratio != 0.25 || got.LogLevel != "debug" {
		t.Errorf("the other options are still decoded: %+v", got)
	}
	type small struct{ Port int16 }
	var err16 error
	h.Setup = func(b *opbus.Bus) error {
		return b.Handle("config", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			_, err16 = juju.LoadConfig[small](ctx, ev)
			_, loadErr = juju.LoadConfig[struct{ Prot int }](ctx, ev)
			return opbus.Status{}, nil
		}, opbus.On{Fields: []string{"config"}})
	}
	m.Config = map[string]any{"port": 70000.0}
	if _, err := h.Run(context.Background(), "config-changed", m); err != nil {
		t.Fatal(err)
	}
	if err16 == nil || !strings.Contains(err16.Error(), `config option "port": want an integer that fits int16, got the number 70000`) {
		t.Errorf("out of range: %v", err16)
	}
	if loadErr == nil || !strings.Contains(loadErr.Error(), `takes config option "prot", which the charm does not declare (did you mean port?`) {
		t.Errorf("an undeclared option: %v", loadErr)
	}
}

type serverOptions struct{ Port int }

// LogOptions is embedded exported, serverOptions unexported.
type LogOptions struct{ LogLevel string }

type embeddedConfig struct {
	serverOptions
	*LogOptions
	Debug bool
}

// TestLoadConfigEmbedded promotes the fields of embedded structs, as
// encoding/json does: before, an unexported embedded struct was skipped
// and an exported one was taken for an option named after its type.
func TestLoadConfigEmbedded(t *testing.T) {
	var got embeddedConfig
	var loadErr error
	h := &jujutest.Harness{CharmDir: loadCharm(t), Setup: func(b *opbus.Bus) error {
		return b.Handle("config", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			got, loadErr = juju.LoadConfig[embeddedConfig](ctx, ev)
			return opbus.Status{}, nil
		}, opbus.On{Fields: []string{"config"}})
	}}
	m := &jujutest.Model{Unit: "web/0", Config: map[string]any{"port": 8081, "debug": true}}
	if _, err := h.Run(context.Background(), "config-changed", m); err != nil || loadErr != nil {
		t.Fatalf("%v, %v", err, loadErr)
	}
	if got.Port != 8081 || got.LogOptions == nil || got.LogLevel != "info" || !got.Debug {
		t.Errorf("config %+v (log options %+v)", got, got.LogOptions)
	}
}

// TestLoadParams decodes an action's parameters into a struct with the
// schema's defaults, nested objects included.
func TestLoadParams(t *testing.T) {
	type params struct {
		Target string
		Level  int64
		Opts   struct{ Compress bool }
	}
	var got params
	var loadErr error
	h := &jujutest.Harness{CharmDir: loadCharm(t), Setup: func(b *opbus.Bus) error {
		return b.Handle("backup", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			got, loadErr = juju.LoadParams[params](ctx, ev)
			return opbus.Status{}, loadErr
		}, juju.OnAction("backup"))
	}}
	m := &jujutest.Model{Unit: "web/0", Action: &jujutest.Action{Name: "backup", Params: map[string]any{"level": 7.0, "opts": map[string]any{}}}}
	if _, err := h.Run(context.Background(), "actions/backup", m); err != nil {
		t.Fatal(err)
	}
	if got.Target != "/srv" || got.Level != 7 || !got.Opts.Compress {
		t.Errorf("params %+v", got)
	}
	var ev opbus.Event
	if _, err := juju.LoadParams[params](context.Background(), &ev); err == nil {
		t.Error("LoadParams outside an action succeeded")
	}
}

// TestLoadParamsNestedError: a nested field that does not fit is named
// once under its parameter, without a second "juju:" and, for a struct
// type without a name, without a dangling dot.
func TestLoadParamsNestedError(t *testing.T) {
	var loadErr error
	h := &jujutest.Harness{CharmDir: loadCharm(t), Setup: func(b *opbus.Bus) error {
		return b.Handle("backup", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			_, loadErr = juju.LoadParams[struct{ Opts struct{ Compress string } }](ctx, ev)
			return opbus.Status{}, nil
		}, juju.OnAction("backup"))
	}}
	m := &jujutest.Model{Unit: "web/0", Action: &jujutest.Action{Name: "backup", Params: map[string]any{"opts": map[string]any{}}}}
	if _, err := h.Run(context.Background(), "actions/backup", m); err != nil {
		t.Fatal(err)
	}
	want := `juju: action parameter "opts": field "compress": want a string, got the boolean true (for Compress) (for Opts)`
	if loadErr == nil || loadErr.Error() != want {
		t.Errorf("got %v\nwant %s", loadErr, want)
	}
}

// A handler reads the config as a struct: options set over the defaults
// of the charm's config.yaml.
func ExampleLoadConfig() {
	dir, err := os.MkdirTemp("", "charm")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte("name: web\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("options:\n  port: {type: int, default: 8080}\n  log-level: {type: string, default: info}\n"), 0o644)

	type config struct {
		Port     int
		LogLevel string // the option log-level
	}
	h := &jujutest.Harness{CharmDir: dir, Setup: func(b *opbus.Bus) error {
		return b.Handle("config", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			cfg, err := juju.LoadConfig[config](ctx, ev)
			if err != nil {
				return opbus.Blocked(err.Error()), nil
			}
			fmt.Printf("%+v\n", cfg)
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"config"}})
	}}
	h.Run(context.Background(), "config-changed", &jujutest.Model{Unit: "web/0", Config: map[string]any{"log-level": "debug"}})
	// Output:
	// {Port:8080 LogLevel:debug}
}
