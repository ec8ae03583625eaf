package kubetest

import (
	"slices"
	"testing"
)

// TestStartOptionsFeatureGates: the gates become one --feature-gates
// flag, in name order; no options give no flags.
func TestStartOptionsFeatureGates(t *testing.T) {
	o := &StartOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true, "AnotherGate": false}}
	if got, want := o.args(), []string{"--feature-gates=AnotherGate=false,ShardedListAndWatch=true"}; !slices.Equal(got, want) {
		t.Fatalf("args %q, want %q", got, want)
	}
	var none *StartOptions
	if got := none.args(); got != nil {
		t.Fatalf("nil options: args %q", got)
	}
}
