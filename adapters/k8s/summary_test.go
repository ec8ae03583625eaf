package k8s

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// TestSummaryCondition: Options.SummaryCondition renames the summary
// condition, spelt as a slot's, so that a slot named "ready" may be the
// Ready condition, and a slot of the new summary's type clashes instead.
func TestSummaryCondition(t *testing.T) {
	for _, tc := range []struct {
		name, summary, want string
	}{
		{"", "", ConditionReady},
		{"", "available", "Available"},
		{"webapp", "available", "webapp.opbus.dev/Available"},
		{"webapp", "", "webapp.opbus.dev/Ready"},
	} {
		src, err := New(&Options{
			Config:           &rest.Config{Host: "https://127.0.0.1:1"},
			Resources:        []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}},
			Name:             tc.name,
			SummaryCondition: tc.summary,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := src.names.ready; got != tc.want {
			t.Errorf("Name %q, SummaryCondition %q: summary type %q, want %q", tc.name, tc.summary, got, tc.want)
		}
		if tc.summary == "" {
			continue
		}
		if _, err := conditionTypes(src.names, []string{"ready", "health"}); err != nil {
			t.Errorf("Name %q, SummaryCondition %q: slot ready refused: %v", tc.name, tc.summary, err)
		}
		_, err = conditionTypes(src.names, []string{"ready", "available"})
		if err == nil || !strings.Contains(err.Error(), `"available"`) || !strings.Contains(err.Error(), "SummaryCondition") {
			t.Errorf("Name %q, SummaryCondition %q: slot available: %v, want a clash naming it and SummaryCondition", tc.name, tc.summary, err)
		}
	}
}
