package jujutest

import (
	"slices"
	"strconv"

	"github.com/opbus/opbus/adapters/juju"
)

// allowedIn reports whether Juju's restricted context of the hook kind
// allows the tool: its RestrictedContext refuses every tool that reads or
// changes the model (config-get, state-*, status-*, is-leader, relation-*,
// secret-*, action-*); collect-metrics adds add-metric, and juju-log works
// in both.
func allowedIn(kind juju.Kind, tool string) bool {
	allowed := []string{"juju-log"}
	if kind == juju.KindCollectMetrics {
		allowed = append(allowed, "add-metric")
	}
	return slices.Contains(allowed, tool)
}

// add-metric [--labels k=v,…] key=value …
//
// Juju records metrics in collect-metrics only: its other hook contexts
// refuse add-metric with "metrics not allowed in this context".
func (m *Model) addMetric(c *call) *result {
	if bad := c.parse(flagSet{values: []string{"labels"}}); bad != nil {
		return bad
	}
	if m.Restricted != juju.KindCollectMetrics {
		return fail("metrics not allowed in this context")
	}
	if len(c.pos) == 0 {
		return usage("no metrics specified")
	}
	kv, bad := keyValues(c.pos)
	if bad != nil {
		return bad
	}
	for _, k := range sortedKeys(kv) {
		if _, err := strconv.ParseFloat(kv[k], 64); err != nil {
			return usage("invalid value type: expected float, got %q", kv[k])
		}
	}
	if m.Metrics == nil {
		m.Metrics = map[string]string{}
	}
	for k, v := range kv {
		m.Metrics[k] = v
	}
	return nil
}
