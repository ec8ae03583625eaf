package jujutest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/opbus/opbus/adapters/juju"
)

// services returns the plan's services by name. The caller holds p.mu.
func (p *Pebble) services() map[string]map[string]any {
	out := map[string]map[string]any{}
	entries, _ := p.plan()["services"].(map[string]any)
	for name, e := range entries {
		out[name] = e.(map[string]any)
	}
	return out
}

// Services returns the status of every service in the plan, by name, as
// the services request returns it.
func (p *Pebble) Services() []juju.ServiceInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.serviceInfos(nil)
}

// serviceInfos lists the named services (all for none). The caller holds
// p.mu.
func (p *Pebble) serviceInfos(names []string) []juju.ServiceInfo {
	svcs := p.services()
	out := []juju.ServiceInfo{}
	for _, name := range sortedKeys(svcs) {
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		startup, _ := svcs[name]["startup"].(string)
		if startup == "" {
			startup = "disabled"
		}
		current := "inactive"
		if _, ok := p.running[name]; ok {
			current = "active"
		}
		out = append(out, juju.ServiceInfo{Name: name, Startup: startup, Current: current})
	}
	return out
}

// StartServices starts the named services of the plan, as Pebble's start
// does, for a test whose charm finds them running: an error names a
// service that is not in the plan or has no command. They stop at a
// [Pebble.Restart].
func (p *Pebble) StartServices(names ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	svcs := p.services()
	for _, name := range names {
		if svcs[name] == nil {
			return fmt.Errorf("jujutest: pebble %q: service %q does not exist", p.Name, name)
		}
	}
	for _, name := range names {
		if _, ok := p.running[name]; ok {
			continue
		}
		if err := p.start(svcs, name); err != nil {
			return fmt.Errorf("jujutest: pebble %q: %w", p.Name, err)
		}
	}
	return nil
}

// start starts the service name of svcs, the plan's services. The
// caller holds p.mu.
func (p *Pebble) start(svcs map[string]map[string]any, name string) error {
	if cmd, _ := svcs[name]["command"].(string); cmd == "" {
		return fmt.Errorf("cannot start service %q: no command", name)
	}
	def, _ := json.Marshal(svcs[name])
	p.running[name] = string(def)
	p.starts[name]++
	return nil
}

// Starts returns how many times the service has started (a restart
// counts), so that a test can tell whether a replan restarted it.
func (p *Pebble) Starts(service string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts[service]
}

// splitNames splits a names= query.
func splitNames(q string) []string {
	if q == "" {
		return nil
	}
	return strings.Split(q, ",")
}

func (p *Pebble) getServices(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sync200(w, p.serviceInfos(splitNames(r.URL.Query().Get("names"))))
}

func (p *Pebble) postServices(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Action   string   `json:"action"`
		Services []string `json:"services"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		errorResponse(w, http.StatusBadRequest, "", "cannot decode data from request body: %v", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	svcs := p.services()
	switch req.Action {
	case "start", "stop", "restart":
		if len(req.Services) == 0 {
			errorResponse(w, http.StatusBadRequest, "", "must specify services for %s action", req.Action)
			return
		}
		for _, name := range req.Services {
			if svcs[name] == nil {
				errorResponse(w, http.StatusBadRequest, "", "cannot %s services: service %q does not exist", req.Action, name)
				return
			}
		}
	case "replan":
	default:
		errorResponse(w, http.StatusBadRequest, "", "invalid action %q", req.Action)
		return
	}
	start := func(name string) error { return p.start(svcs, name) }
	var err error
	switch req.Action {
	case "start":
		for _, name := range req.Services {
			if _, ok := p.running[name]; !ok && err == nil {
				err = start(name)
			}
		}
	case "stop":
		for _, name := range req.Services {
			delete(p.running, name)
		}
	case "restart":
		for _, name := range req.Services {
			delete(p.running, name)
			if err == nil {
				err = start(name)
			}
		}
	case "replan":
		for _, name := range sortedKeys(p.running) {
			def, _ := json.Marshal(svcs[name])
			if svcs[name] == nil {
				delete(p.running, name)
			} else if string(def) != p.running[name] && err == nil {
				err = start(name)
			}
		}
		for _, name := range sortedKeys(svcs) {
			if _, ok := p.running[name]; !ok && svcs[name]["startup"] == "enabled" && err == nil {
				err = start(name)
			}
		}
	}
	ch := p.newChange(req.Action)
	if err != nil {
		ch.err = err.Error()
	}
	close(ch.ready)
	async202(w, ch.id, nil)
}

// newChange records a new change. The caller holds p.mu.
func (p *Pebble) newChange(kind string) *pebbleChange {
	p.nextID++
	ch := &pebbleChange{id: strconv.Itoa(p.nextID), kind: kind, ready: make(chan struct{}), taskID: "t" + strconv.Itoa(p.nextID), data: map[string]any{}}
	p.changes[ch.id] = ch
	return ch
}

func (p *Pebble) waitChange(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p.mu.Lock()
	ch := p.changes[id]
	p.mu.Unlock()
	if ch == nil {
		errorResponse(w, http.StatusNotFound, "", "cannot find change with id %q", id)
		return
	}
	select {
	case <-ch.ready:
	case <-r.Context().Done():
		errorResponse(w, http.StatusInternalServerError, "", "request cancelled")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	status := "Done"
	if ch.err != "" {
		status = "Error"
	}
	info := map[string]any{"id": ch.id, "kind": ch.kind, "status": status, "ready": true,
		"tasks": []any{map[string]any{"id": ch.taskID, "kind": ch.kind, "status": status, "data": ch.data}}}
	if ch.err != "" {
		info["err"] = ch.err
	}
	sync200(w, info)
}

// SetCheck sets the status of a check of the plan ("up" or "down") and its
// count of failures in a row, as Pebble's checker would.
func (p *Pebble) SetCheck(name, status string, failures int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks[name] = &juju.CheckInfo{Name: name, Status: status, Failures: failures}
}

func (p *Pebble) getChecks(w http.ResponseWriter, r *http.Request) {
	names := splitNames(r.URL.Query().Get("names"))
	p.mu.Lock()
	defer p.mu.Unlock()
	checks, _ := p.plan()["checks"].(map[string]any)
	out := []juju.CheckInfo{}
	for _, name := range sortedKeys(checks) {
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		c, _ := checks[name].(map[string]any)
		level, _ := c["level"].(string)
		threshold := 3
		if t, ok := c["threshold"].(float64); ok && t > 0 {
			threshold = int(t)
		}
		info := juju.CheckInfo{Name: name, Level: level, Status: "up", Threshold: threshold}
		if s := p.checks[name]; s != nil {
			info.Status, info.Failures = s.Status, s.Failures
		}
		out = append(out, info)
	}
	sync200(w, out)
}
