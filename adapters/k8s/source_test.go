package k8s

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/opbus/opbus"
)

// TestTooManySlotsNamed registers more handlers than a bus can ignore
// conditions for: the error names the handlers and the limit.
func TestTooManySlotsNamed(t *testing.T) {
	tests := []struct {
		handlers int
		fails    bool
	}{
		{10, false},
		{50, false},
		{70, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.handlers), func(t *testing.T) {
			s, _, _ := fakeSource(t, widgets, "Widget", StatusConditions)
			bus, err := opbus.New(s.BusOptions(nil))
			if err != nil {
				t.Fatal(err)
			}
			for i := range tt.handlers {
				err := bus.Handle(fmt.Sprintf("check-%d", i), func(context.Context, *opbus.Event) (opbus.Status, error) {
					return opbus.Active(""), nil
				}, opbus.On{})
				if err != nil {
					t.Fatal(err)
				}
			}
			err = s.declare(bus, []*resource{s.kinds["Widget.example.com"]})
			if !tt.fails {
				if err != nil {
					t.Fatalf("declare: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("declare accepted %d slots", tt.handlers)
			}
			for _, want := range []string{"check-0", fmt.Sprintf("check-%d", tt.handlers-1), "at most 64", "StatusAnnotation"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
