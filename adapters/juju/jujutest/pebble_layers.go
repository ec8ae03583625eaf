package jujutest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/opbus/opbus/adapters/juju"
)

func (p *Pebble) postLayers(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Action  string `json:"action"`
		Combine bool   `json:"combine"`
		Label   string `json:"label"`
		Format  string `json:"format"`
		Layer   string `json:"layer"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		errorResponse(w, http.StatusBadRequest, "", "cannot decode request body: %v", err)
		return
	}
	if req.Action != "add" {
		errorResponse(w, http.StatusBadRequest, "", "invalid action %q", req.Action)
		return
	}
	if req.Format != "yaml" {
		errorResponse(w, http.StatusBadRequest, "", "invalid format %q", req.Format)
		return
	}
	if err := checkYAMLInput(req.Layer, true); err != nil {
		errorResponse(w, http.StatusBadRequest, "", "cannot parse layer YAML: %v", err)
		return
	}
	var layer map[string]any
	if err := json.Unmarshal([]byte(req.Layer), &layer); err != nil {
		errorResponse(w, http.StatusBadRequest, "", "cannot parse layer (the fake reads YAML in its JSON form only): %v", err)
		return
	}
	if err := p.addLayer(req.Label, layer, req.Combine); err != nil {
		errorResponse(w, http.StatusBadRequest, "", "%v", err)
		return
	}
	sync200(w, true)
}

// layerSections are the sections of a layer whose entries combine.
var layerSections = []string{"services", "checks", "log-targets"}

// addLayer adds or combines a layer as Pebble does.
func (p *Pebble) addLayer(label string, layer map[string]any, combine bool) error {
	if label == "" {
		return errors.New("label must be set")
	}
	if err := checkLayer(label, layer); err != nil {
		return fmt.Errorf("cannot parse layer YAML: %w", err)
	}
	for _, sec := range layerSections {
		entries, _ := layer[sec].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(entries)) {
			m, _ := entries[name].(map[string]any)
			what := strings.ReplaceAll(strings.TrimSuffix(sec, "s"), "-", " ")
			switch o, set := m["override"]; {
			case !set || o == "":
				return fmt.Errorf("layer %q must define \"override\" for %s %q", label, what, name)
			case o != "merge" && o != "replace":
				return fmt.Errorf("layer %q has invalid \"override\" value for %s %q", label, what, name)
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.layers, func(l *pebbleLayer) bool { return l.label == label })
	if i >= 0 && !combine {
		return fmt.Errorf("layer %q already exists", label)
	}
	next := &pebbleLayer{label: label, layer: layer}
	if i >= 0 {
		next.layer = combineLayers(p.layers[i].layer, layer)
	}
	layers := slices.Clone(p.layers)
	if i >= 0 {
		layers[i] = next
	} else {
		layers = append(layers, next)
	}
	if err := checkPlan(layers); err != nil {
		return err
	}
	p.layers = layers
	return nil
}

// checkPlan refuses, as Pebble does when a layer is added, layers whose
// combined plan has a service without a command or requiring one the
// plan lacks, or a check of no kind: Pebble keeps its plan as it was.
func checkPlan(layers []*pebbleLayer) error {
	var combined map[string]any
	for _, l := range layers {
		combined = combineLayers(combined, l.layer)
	}
	services, _ := combined["services"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc, _ := services[name].(map[string]any)
		if cmd, _ := svc["command"].(string); cmd == "" {
			return fmt.Errorf("plan must define \"command\" for service %q", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc, _ := services[name].(map[string]any)
		requires, _ := svc["requires"].([]any)
		for _, r := range requires {
			if rs, _ := r.(string); services[rs] == nil {
				return fmt.Errorf("service %q does not exist", rs)
			}
		}
	}
	checks, _ := combined["checks"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(checks)) {
		c, _ := checks[name].(map[string]any)
		if c["http"] == nil && c["tcp"] == nil && c["exec"] == nil {
			return fmt.Errorf("plan must specify one of \"http\", \"tcp\", or \"exec\" for check %q", name)
		}
	}
	return nil
}

// Pebble's service actions: every on-* field takes these, on-success
// failure-shutdown too, on-failure and on-check-failure success-shutdown.
var serviceActions = []string{"", "restart", "shutdown", "ignore"}

// checkLayer refuses what Pebble refuses as it parses a layer: a label
// with Pebble's reserved prefix, a service duration that is not one, a
// backoff factor below 1 and an unknown service action.
func checkLayer(label string, layer map[string]any) error {
	if strings.HasPrefix(label, "pebble-") {
		return errors.New(`cannot use reserved label prefix "pebble-"`)
	}
	services, _ := layer["services"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc, _ := services[name].(map[string]any)
		for _, k := range []string{"backoff-delay", "backoff-limit", "kill-delay"} {
			if d, ok := svc[k].(string); ok {
				if _, err := time.ParseDuration(d); err != nil {
					return fmt.Errorf("cannot parse layer %q section \"services\": invalid duration %q", label, d)
				}
			}
		}
		valid := func(action any, extra string) bool {
			s, ok := action.(string)
			return action == nil || ok && (slices.Contains(serviceActions, s) || s == extra)
		}
		if a := svc["on-success"]; !valid(a, "failure-shutdown") {
			return fmt.Errorf("plan service %q on-success action %q invalid", name, a)
		}
		if a := svc["on-failure"]; !valid(a, "success-shutdown") {
			return fmt.Errorf("plan service %q on-failure action %q invalid", name, a)
		}
		onCheck, _ := svc["on-check-failure"].(map[string]any)
		for _, check := range slices.Sorted(maps.Keys(onCheck)) {
			if a := onCheck[check]; !valid(a, "success-shutdown") {
				return fmt.Errorf("plan service %q on-check-failure action %q invalid", name, a)
			}
		}
		if f, ok := svc["backoff-factor"].(float64); ok && f < 1 {
			return fmt.Errorf("plan service %q backoff-factor must be 1.0 or greater, not %g", name, f)
		}
	}
	return nil
}

// combineLayers returns upper combined onto lower: each service or check
// replaces the lower one or merges into it as its override says; other
// fields of upper replace lower's.
func combineLayers(lower, upper map[string]any) map[string]any {
	out := maps.Clone(lower)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range upper {
		if !slices.Contains(layerSections, k) {
			out[k] = v
			continue
		}
		entries, _ := out[k].(map[string]any)
		entries = maps.Clone(entries)
		if entries == nil {
			entries = map[string]any{}
		}
		up, _ := v.(map[string]any)
		for name, e := range up {
			em, _ := e.(map[string]any)
			old, _ := entries[name].(map[string]any)
			if em["override"] == "replace" || old == nil {
				entries[name] = em
			} else {
				entries[name] = mergeEntry(old, em)
			}
		}
		out[k] = entries
	}
	return out
}

// mergeEntry merges upper into lower as Pebble's "merge" override does:
// maps merge by key, lists append, other values replace, but the entry
// keeps lower's override.
func mergeEntry(lower, upper map[string]any) map[string]any {
	out := maps.Clone(lower)
	for k, v := range upper {
		if k == "override" {
			continue
		}
		switch uv := v.(type) {
		case map[string]any:
			lm, _ := out[k].(map[string]any)
			m := maps.Clone(lm)
			if m == nil {
				m = map[string]any{}
			}
			maps.Copy(m, uv)
			out[k] = m
		case []any:
			ll, _ := out[k].([]any)
			out[k] = append(slices.Clone(ll), uv...)
		default:
			out[k] = v
		}
	}
	return out
}

// plan returns the combined plan's JSON form: its services, checks and
// log targets, each with its override, as Pebble's plan has them. The caller holds
// p.mu.
func (p *Pebble) plan() map[string]any {
	var combined map[string]any
	for _, l := range p.layers {
		combined = combineLayers(combined, l.layer)
	}
	plan := map[string]any{}
	for _, sec := range layerSections {
		if entries, ok := combined[sec].(map[string]any); ok && len(entries) > 0 {
			plan[sec] = entries
		}
	}
	// Pebble's plan shows a check's threshold, 3 unless a layer says.
	if checks, ok := plan["checks"].(map[string]any); ok {
		for name, c := range checks {
			if m, _ := c.(map[string]any); m != nil && m["threshold"] == nil {
				m = maps.Clone(m)
				m["threshold"] = 3.0
				checks[name] = m
			}
		}
	}
	return plan
}

// Plan returns the plan the layers combine to, as Pebble shows it: its
// services, checks and log targets, each with the override of the layer that first
// defined it or last replaced it.
func (p *Pebble) Plan() *juju.Layer {
	p.mu.Lock()
	data, _ := json.Marshal(p.plan())
	p.mu.Unlock()
	l := new(juju.Layer)
	json.Unmarshal(data, l)
	return l
}

// SeedLayer adds layer to the plan as one of the image's layers (in
// Pebble's layers directory) labelled label: it is in the plan from the
// start and again after a [Pebble.Restart]. Seed before the charm runs;
// a label seeded twice combines.
func (p *Pebble) SeedLayer(label string, layer *juju.Layer) error {
	m, err := layerMap(layer)
	if err == nil {
		err = p.addLayer(label, m, true)
	}
	if err != nil {
		return fmt.Errorf("jujutest: pebble %q: seeding layer %q: %w", p.Name, label, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.seeded {
		if l.label == label {
			l.layer = combineLayers(l.layer, m)
			return nil
		}
	}
	p.seeded = append(p.seeded, &pebbleLayer{label: label, layer: m})
	return nil
}

// AddLayer adds layer to the plan as the layers API does (see
// [juju.Container.AddLayer]), for a test that sets up a Pebble the charm
// finds already configured. A [Pebble.Restart] forgets it.
func (p *Pebble) AddLayer(label string, layer *juju.Layer, combine bool) error {
	m, err := layerMap(layer)
	if err == nil {
		err = p.addLayer(label, m, combine)
	}
	if err != nil {
		return fmt.Errorf("jujutest: pebble %q: adding layer %q: %w", p.Name, label, err)
	}
	return nil
}

// layerMap returns a layer's JSON form.
func layerMap(layer *juju.Layer) (map[string]any, error) {
	data, err := json.Marshal(layer)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(data, &m)
	return m, err
}

// Layers returns the labels of the layers, in the order they were added.
func (p *Pebble) Layers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.layers {
		out = append(out, l.label)
	}
	return out
}
