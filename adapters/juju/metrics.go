package juju

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// AddMetric records metric values during collect-metrics:
// add-metric [--labels k=v,…] key=value…, in key order. Values are
// numbers, as Juju requires; keys are those the charm's metrics.yaml
// declares. Label keys and values may not contain "," or "=".
func (t Tools) AddMetric(ctx context.Context, metrics map[string]float64, labels map[string]string) error {
	if len(metrics) == 0 {
		return errors.New("juju: add-metric: no metrics")
	}
	var args []string
	if len(labels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			if k == "" || strings.ContainsAny(k, ",=") || strings.ContainsAny(labels[k], ",=") {
				return fmt.Errorf("juju: add-metric: invalid label %q=%q (no empty key, no \",\" or \"=\")", k, labels[k])
			}
			ls = append(ls, k+"="+labels[k])
		}
		args = append(args, "--labels", strings.Join(ls, ","))
	}
	for _, k := range slices.Sorted(maps.Keys(metrics)) {
		if k == "" || strings.ContainsAny(k, "=") || strings.HasPrefix(k, "-") {
			return fmt.Errorf("juju: add-metric: invalid metric key %q", k)
		}
		args = append(args, k+"="+strconv.FormatFloat(metrics[k], 'g', -1, 64))
	}
	_, err := t.run(ctx, "add-metric", args, nil)
	return err
}
