package k8s

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNamesFor(t *testing.T) {
	tests := []struct {
		name                                 string
		record, status, finalizer, ready, sz string
	}{
		{"", AnnotationRecord, AnnotationStatus, Finalizer, ConditionReady, "Size"},
		{"opbus", AnnotationRecord, AnnotationStatus, Finalizer, ConditionReady, "Size"},
		{"audit", "audit.opbus.dev/record", "audit.opbus.dev/status", "audit.opbus.dev/cleanup", "audit.opbus.dev/Ready", "audit.opbus.dev/Size"},
		{"Audit", "audit-bb6aea28.opbus.dev/record", "audit-bb6aea28.opbus.dev/status", "audit-bb6aea28.opbus.dev/cleanup", // not audit's
			"audit-bb6aea28.opbus.dev/Ready", "audit-bb6aea28.opbus.dev/Size"},
		{"my operator", "my-operator-05773892.opbus.dev/record", "my-operator-05773892.opbus.dev/status",
			"my-operator-05773892.opbus.dev/cleanup", "my-operator-05773892.opbus.dev/Ready", "my-operator-05773892.opbus.dev/Size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := namesFor(tt.name)
			got := []string{n.record, n.status, n.finalizer, n.ready, n.condition("size")}
			want := []string{tt.record, tt.status, tt.finalizer, tt.ready, tt.sz}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("got %q, want %q", got[i], want[i])
				}
				if errs := validation.IsQualifiedName(got[i]); len(errs) > 0 {
					t.Errorf("%q is not a qualified name: %v", got[i], errs)
				}
			}
		})
	}
	// Every slot gets a valid condition type of its own.
	n := namesFor("audit")
	seen := map[string]string{n.ready: "(Ready)"}
	for _, id := range []string{"a/b", "a_c", "my slot", "example.com/crash-watch", string(make([]byte, 100)), "x"} {
		c := n.condition(id)
		if errs := validation.IsQualifiedName(c); len(errs) > 0 {
			t.Errorf("condition(%q) = %q: %v", id, c, errs)
		}
		if other, dup := seen[c]; dup {
			t.Errorf("condition(%q) = %q, as for %q", id, c, other)
		}
		seen[c] = id
	}
}
