package jujutest

import "strconv"

// restrictedTools are the tools Juju's restricted context of
// collect-metrics allows.
var restrictedTools = []string{"add-metric", "config-get", "juju-log"}

// add-metric [--labels k=v,…] key=value …
func (m *Model) addMetric(c *call) *result {
	if bad := c.parse(flagSet{values: []string{"labels"}}); bad != nil {
		return bad
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
