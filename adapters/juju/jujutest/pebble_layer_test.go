package jujutest_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// oddText holds the characters encoding/json leaves raw that Pebble's
// YAML reader refuses (U+007F, the C1 controls, U+FFFE, U+FFFF) or folds
// into a space (U+0085).
const oddText = "a\x7fb\u0080c\u0085d\u009fe\ufffef\uffffg"

// postRaw sends a layers request with layer as it is, and returns the
// response's status and body.
func postRaw(t *testing.T, c *juju.Container, layer string) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", c.Socket)
	}}}
	body, _ := json.Marshal(map[string]any{"action": "add", "label": "raw", "format": "yaml", "layer": layer})
	resp, err := client.Post("http://localhost/v1/layers", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestPebbleLayerEscapes: AddLayer escapes what Pebble's YAML reader
// refuses, so that a layer holding such characters is added and its
// strings reach the plan unchanged; sent raw, Pebble (and the fake)
// refuse the layer.
func TestPebbleLayerEscapes(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			svc := &juju.Service{Override: "replace", Command: "app --motd " + oddText, Environment: map[string]string{"MOTD": oddText}}
			if err := c.AddLayer(ctx, "odd", &juju.Layer{Summary: oddText, Services: map[string]*juju.Service{"app": svc}}, false); err != nil {
				t.Fatalf("AddLayer: %v", err)
			}
			plan, err := c.Plan(ctx)
			if got := plan.Services["app"]; err != nil || got == nil || got.Command != svc.Command || got.Environment["MOTD"] != oddText {
				t.Errorf("the plan's service: got %+v, %v; want command %q and MOTD %q", got, err, svc.Command, oddText)
			}
			raw, _ := json.Marshal(map[string]any{"services": map[string]any{"raw": map[string]any{"override": "replace", "command": "app " + oddText}}})
			status, body := postRaw(t, c, string(raw))
			if status != http.StatusBadRequest || !strings.Contains(body, "control characters are not allowed") {
				t.Errorf("raw: got %d %s, want 400 with YAML's refusal", status, body)
			}
		})
	}
	// The strings reach the plan unchanged.
	dir := jujutest.PebbleDir(t)
	p := jujutest.StartPebble(t, dir, "workload")
	svc := &juju.Service{Override: "replace", Command: "app", Environment: map[string]string{"MOTD": oddText}}
	if err := juju.NewContainer("workload", dir).AddLayer(context.Background(), "odd", &juju.Layer{Services: map[string]*juju.Service{"app": svc}}, false); err != nil {
		t.Fatal(err)
	}
	if got := p.Plan().Services["app"].Environment["MOTD"]; got != oddText {
		t.Errorf("the plan's MOTD: got %q, want %q", got, oddText)
	}
}

// TestPebbleLayerNeedsCommand: a layer whose plan would hold a service
// without a command is refused, as Pebble refuses it, and the plan stays
// as it was; a merge that only adds environment to a service with a
// command is taken.
func TestPebbleLayerNeedsCommand(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			bare := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "merge", Environment: map[string]string{"A": "1"}}}}
			if err := c.AddLayer(ctx, "env", bare, false); err == nil || !strings.Contains(err.Error(), `plan must define "command" for service "app"`) {
				t.Errorf("a service without a command: %v", err)
			}
			if plan, err := c.Plan(ctx); err != nil || len(plan.Services) != 0 {
				t.Errorf("the plan after the refused layer: %+v, %v", plan, err)
			}
			base := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "replace", Command: "/bin/app"}}}
			if err := c.AddLayer(ctx, "base", base, false); err != nil {
				t.Fatal(err)
			}
			if err := c.AddLayer(ctx, "env", bare, false); err != nil {
				t.Errorf("a merge onto a service with a command: %v", err)
			}
			replace := &juju.Layer{Services: map[string]*juju.Service{"app": {Override: "replace", Summary: "no command"}}}
			if err := c.AddLayer(ctx, "base", replace, true); err == nil || !strings.Contains(err.Error(), `plan must define "command" for service "app"`) {
				t.Errorf("a replace without a command: %v", err)
			}
			plan, err := c.Plan(ctx)
			if got := plan.Services["app"]; err != nil || got == nil || got.Command != "/bin/app" || got.Environment["A"] != "1" {
				t.Errorf("the plan: %+v, %v; want /bin/app with A=1", got, err)
			}
		})
	}
}

// TestPebbleLayerRefused: layers Pebble refuses, in its words, leaving the
// plan as it was: an unknown or missing override, a service action,
// duration or backoff factor Pebble does not know, a service requiring
// one the plan lacks, a check of no kind, and Pebble's reserved label
// prefix.
func TestPebbleLayerRefused(t *testing.T) {
	svc := func(s juju.Service) *juju.Layer {
		if s.Command == "" {
			s.Command = "/bin/app"
		}
		return &juju.Layer{Services: map[string]*juju.Service{"app": &s}}
	}
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			for _, tt := range []struct {
				label string
				layer *juju.Layer
				want  string
			}{
				{"a", svc(juju.Service{Override: "mrege"}), `layer "a" has invalid "override" value for service "app"`},
				{"a", svc(juju.Service{}), `layer "a" must define "override" for service "app"`},
				{"a", svc(juju.Service{Override: "replace", OnFailure: "restrat"}), `plan service "app" on-failure action "restrat" invalid`},
				{"a", svc(juju.Service{Override: "replace", OnSuccess: "success-shutdown"}), `plan service "app" on-success action "success-shutdown" invalid`},
				{"a", svc(juju.Service{Override: "replace", OnCheckFailure: map[string]string{"up": "reboot"}}), `plan service "app" on-check-failure action "reboot" invalid`},
				{"a", svc(juju.Service{Override: "replace", BackoffFactor: 0.5}), `plan service "app" backoff-factor must be 1.0 or greater, not 0.5`},
				{"a", svc(juju.Service{Override: "replace", KillDelay: "soon"}), `cannot parse layer "a" section "services": invalid duration "soon"`},
				{"a", svc(juju.Service{Override: "replace", Requires: []string{"db"}}), `service "db" does not exist`},
				{"a", &juju.Layer{Checks: map[string]*juju.Check{"up": {Override: "replace"}}}, `plan must specify one of "http", "tcp", or "exec" for check "up"`},
				{"pebble-a", svc(juju.Service{Override: "replace"}), `cannot use reserved label prefix "pebble-"`},
			} {
				if err := c.AddLayer(ctx, tt.label, tt.layer, true); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%+v: got %v, want %q", tt.layer, err, tt.want)
				}
			}
			if plan, err := c.Plan(ctx); err != nil || len(plan.Services) != 0 || len(plan.Checks) != 0 {
				t.Errorf("the plan after refused layers: %+v, %v", plan, err)
			}
			ok := svc(juju.Service{Override: "replace", OnSuccess: "failure-shutdown", OnFailure: "success-shutdown", BackoffFactor: 1.5, KillDelay: "10s", After: []string{"elsewhere"}})
			if err := c.AddLayer(ctx, "a", ok, false); err != nil {
				t.Errorf("a layer Pebble takes: %v", err)
			}
		})
	}
}

// TestPebbleServiceErrors: starting, stopping or restarting no service or
// one the plan lacks fails in Pebble's words.
func TestPebbleServiceErrors(t *testing.T) {
	for _, target := range pebbleTargets() {
		t.Run(target.name, func(t *testing.T) {
			c, _ := target.start(t)
			ctx := context.Background()
			for _, tt := range []struct {
				action string
				call   func(context.Context, ...string) error
			}{{"start", c.Start}, {"stop", c.Stop}, {"restart", c.Restart}} {
				if err := tt.call(ctx); err == nil || !strings.Contains(err.Error(), "must specify services for "+tt.action+" action") {
					t.Errorf("%s of no service: %v", tt.action, err)
				}
				if err := tt.call(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "cannot "+tt.action+` services: service "nope" does not exist`) {
					t.Errorf("%s of an unknown service: %v", tt.action, err)
				}
			}
		})
	}
}
