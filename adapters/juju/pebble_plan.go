package juju

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/opbus/opbus/adapters/juju/internal/charmyaml"
)

// Layer is a Pebble layer: services, checks and log targets to add to the
// plan, or the plan itself ([Container.Plan]). Its fields are those of
// Pebble's layer specification, spelled as in its YAML.
type Layer struct {
	Summary     string                `json:"summary,omitempty"`
	Description string                `json:"description,omitempty"`
	Services    map[string]*Service   `json:"services,omitempty"`
	Checks      map[string]*Check     `json:"checks,omitempty"`
	LogTargets  map[string]*LogTarget `json:"log-targets,omitempty"`
}

// Service is a service of a [Layer]. Override is "merge" or "replace"
// (required in a layer). Durations are Go durations as strings ("500ms",
// "1m"); a zero field is left to the lower layers or Pebble's default.
type Service struct {
	Override    string `json:"override,omitempty"`
	Summary     string `json:"summary,omitempty"`
	Description string `json:"description,omitempty"`
	// Command runs the service (no shell); arguments in [ ] are the
	// defaults "pebble run --args" may replace.
	Command string `json:"command,omitempty"`
	// Startup is "enabled" (replan and Pebble's start start it) or
	// "disabled".
	Startup string `json:"startup,omitempty"`
	// Environment holds variables for the command.
	Environment map[string]string `json:"environment,omitempty"`
	// User and Group (or UserID and GroupID) run the command; WorkingDir
	// is where.
	User       string `json:"user,omitempty"`
	UserID     *int   `json:"user-id,omitempty"`
	Group      string `json:"group,omitempty"`
	GroupID    *int   `json:"group-id,omitempty"`
	WorkingDir string `json:"working-dir,omitempty"`
	// Requires are started with it; After and Before order the starts.
	Requires []string `json:"requires,omitempty"`
	After    []string `json:"after,omitempty"`
	Before   []string `json:"before,omitempty"`
	// OnSuccess and OnFailure say what Pebble does when the command
	// exits 0 or not: "restart" (the default), "shutdown",
	// "failure-shutdown", "success-shutdown" or "ignore"; OnCheckFailure
	// does so per failing check.
	OnSuccess      string            `json:"on-success,omitempty"`
	OnFailure      string            `json:"on-failure,omitempty"`
	OnCheckFailure map[string]string `json:"on-check-failure,omitempty"`
	// BackoffDelay is the first wait before a restart (default 500ms),
	// multiplied by BackoffFactor (default 2) at each restart up to
	// BackoffLimit (default 30s).
	BackoffDelay  string  `json:"backoff-delay,omitempty"`
	BackoffFactor float64 `json:"backoff-factor,omitempty"`
	BackoffLimit  string  `json:"backoff-limit,omitempty"`
	// KillDelay is how long Pebble waits after SIGTERM before SIGKILL
	// (default 5s).
	KillDelay string `json:"kill-delay,omitempty"`
}

// Check is a health check of a [Layer]: one of HTTP, TCP or Exec.
type Check struct {
	Override  string     `json:"override,omitempty"`
	Level     string     `json:"level,omitempty"`   // "alive", "ready" or none
	Startup   string     `json:"startup,omitempty"` // "enabled" or "disabled"
	Period    string     `json:"period,omitempty"`
	Timeout   string     `json:"timeout,omitempty"`
	Threshold int        `json:"threshold,omitempty"`
	HTTP      *HTTPCheck `json:"http,omitempty"`
	TCP       *TCPCheck  `json:"tcp,omitempty"`
	Exec      *ExecCheck `json:"exec,omitempty"`
}

// HTTPCheck checks that a GET of URL succeeds.
type HTTPCheck struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// TCPCheck checks that a TCP connection opens.
type TCPCheck struct {
	Port int    `json:"port"`
	Host string `json:"host,omitempty"`
}

// ExecCheck checks that a command exits 0. ServiceContext names a
// service whose environment, user, group and working directory the
// command gets, unless the other fields say otherwise.
type ExecCheck struct {
	Command        string            `json:"command"`
	ServiceContext string            `json:"service-context,omitempty"`
	Environment    map[string]string `json:"environment,omitempty"`
	User           string            `json:"user,omitempty"`
	UserID         *int              `json:"user-id,omitempty"`
	Group          string            `json:"group,omitempty"`
	GroupID        *int              `json:"group-id,omitempty"`
	WorkingDir     string            `json:"working-dir,omitempty"`
}

// LogTarget is where Pebble forwards services' logs.
type LogTarget struct {
	Override string `json:"override,omitempty"`
	// Type is "loki" or "opentelemetry"; Location its URL.
	Type     string `json:"type,omitempty"`
	Location string `json:"location,omitempty"`
	// Services names the services whose logs go there ("all", or
	// "-name" to take one out).
	Services []string          `json:"services,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
}

// Plan returns Pebble's plan, what its layers combine to (as ops'
// Container.get_plan and "pebble plan" show it): its services, checks
// and log targets, each with its override. Pebble sends it as YAML,
// which Plan reads; a plan it cannot read is an error naming the line.
func (c *Container) Plan(ctx context.Context) (*Layer, error) {
	var text string
	if _, err := c.do(ctx, "GET", "/v1/plan", url.Values{"format": {"yaml"}}, "", nil, &text); err != nil {
		return nil, c.wrap(err, "plan")
	}
	plan, err := parsePlan(text)
	if err != nil {
		return nil, c.wrap(err, "plan")
	}
	return plan, nil
}

// parsePlan reads the YAML of a plan.
func parsePlan(text string) (*Layer, error) {
	v, err := charmyaml.Parse([]byte(text))
	if err == nil {
		var data []byte
		if data, err = json.Marshal(v); err == nil {
			plan := new(Layer)
			if err = json.Unmarshal(data, plan); err == nil {
				return plan, nil
			}
		}
	}
	return nil, fmt.Errorf("reading the plan: %w", err)
}
