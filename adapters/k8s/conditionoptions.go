package k8s

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/nearest"
)

// Condition says how the condition of one status slot (a handler's, or
// one of [Options].Slots) is written; see [Options].Conditions. Its zero
// value is the default: type [ConditionType](slot), True when the slot is
// active.
type Condition struct {
	// Type is the condition's type, as the author chooses it
	// ("Available", "Degraded", "example.com/Synced"), written as given
	// whatever the operator's name; "" means [ConditionType] of the slot,
	// under the operator's domain for a named operator. It must be a
	// qualified name, as metav1.Condition's type is.
	Type string
	// AbnormalTrue makes the condition one of the abnormal-true types
	// the Kubernetes API conventions allow (Degraded, Stalled): True when
	// the slot is waiting, blocked or failed, False when it is active,
	// Unknown while its handler has not decided or is in progress.
	AbnormalTrue bool
}

// ReasonReconciling is the reason of a handler's condition before the
// handler has run on the object: its status is Unknown.
const ReasonReconciling = "Reconciling"

// conditionStatus maps a level to a condition's status. A normal-true
// condition is True when active, Unknown while undecided (the unknown
// level) or in progress (maintenance), and False when waiting, blocked
// or failed; an abnormal-true one is False when active, Unknown likewise,
// and True otherwise.
func conditionStatus(l opbus.Level, abnormal bool) metav1.ConditionStatus {
	switch l {
	case opbus.LevelUnknown, opbus.LevelMaintenance:
		return metav1.ConditionUnknown
	case opbus.LevelActive:
		if abnormal {
			return metav1.ConditionFalse
		}
		return metav1.ConditionTrue
	}
	if abnormal {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// validateConditions checks [Options].Conditions and the summary's
// options.
func (o *Options) validateConditions() error {
	types := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(o.Conditions)) {
		c := o.Conditions[id]
		if id == "" {
			return fmt.Errorf("k8s: Options.Conditions has an empty slot id: expected a handler's ID or a slot of Options.Slots")
		}
		if c.Type == "" {
			continue
		}
		if errs := validation.IsQualifiedName(c.Type); len(errs) > 0 {
			return fmt.Errorf("k8s: Options.Conditions[%q].Type %q is not a condition type: %s", id, c.Type, strings.Join(errs, "; "))
		}
		if other, dup := types[c.Type]; dup {
			return fmt.Errorf("k8s: Options.Conditions: slots %q and %q both have condition type %s: give each slot a type of its own", other, id, c.Type)
		}
		types[c.Type] = id
	}
	if o.NoSummaryCondition && o.SummaryCondition != "" {
		return fmt.Errorf("k8s: Options.NoSummaryCondition is set and SummaryCondition names %q: set one of them", o.SummaryCondition)
	}
	return nil
}

// checkConditionSlots refuses an entry of [Options].Conditions that names
// no slot of the bus, with the slot meant when one is close.
func (s *Source) checkConditionSlots(slots []string) error {
	for _, id := range slices.Sorted(maps.Keys(s.opts.Conditions)) {
		if slices.Contains(slots, id) {
			continue
		}
		hint := ""
		if near := nearest.Names(id, slots, 1); len(near) > 0 && nearest.Distance(strings.ToLower(id), strings.ToLower(near[0])) <= max(2, len(id)/3) {
			hint = fmt.Sprintf(": did you mean %q?", near[0])
		}
		return fmt.Errorf("k8s: Options.Conditions names slot %q, which is no handler's ID nor one of Options.Slots (slots: %s)%s", id, strings.Join(slots, ", "), hint)
	}
	return nil
}
