package k8s

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opbus/opbus"
)

// maxMessage bounds a condition's message, as metav1.Condition's schema
// does.
const maxMessage = 32768

// reason returns the condition reason for a level: its word in CamelCase,
// such as "Blocked".
func reason(l opbus.Level) string {
	w := l.String()
	return strings.ToUpper(w[:1]) + w[1:]
}

// statusReason returns the condition reason of s: its own, or its level's
// word. The bus lets no status through with a reason of another syntax
// than a condition's.
func statusReason(s opbus.Status) string {
	if s.Reason != "" {
		return s.Reason
	}
	return reason(s.Level)
}

// condition returns the condition of type typ for the status s, of
// normal or abnormal polarity (see conditionStatus).
func condition(typ string, s opbus.Status, gen int64, abnormal bool) metav1.Condition {
	msg := s.Message
	msg = truncate(msg, maxMessage)
	return metav1.Condition{
		Type:               typ,
		Status:             conditionStatus(s.Level, abnormal),
		Reason:             statusReason(s),
		Message:            msg,
		ObservedGeneration: gen,
	}
}

// wantConditions returns the conditions for an overall status and its
// slots: the summary Ready first (unless there is none), then one per
// slot in slot-name order, then an Unknown one (reason
// [ReasonReconciling]) for each of deciders that has no slot: the
// handlers that run on the object, for the first conditions, written when
// it is claimed, before any has run. A pass's conditions have no
// deciders: a handler that ran and returned no status has no condition.
// Slots whose condition type is not in ours are left out: their writes
// would not be ignored by the bus.
func wantConditions(overall opbus.Status, slots opbus.Slots, gen int64, n *names, ours map[string]bool, deciders []string) []metav1.Condition {
	var out []metav1.Condition
	if n.ready != "" {
		out = append(out, condition(n.ready, overall, gen, false))
	}
	for _, id := range slots.Names() {
		t := n.condition(id)
		if !ours[t] {
			continue
		}
		out = append(out, condition(t, slots[id], gen, n.abnormal[id]))
	}
	for _, id := range deciders {
		if _, ok := slots[id]; ok || !ours[n.condition(id)] {
			continue
		}
		out = append(out, condition(n.condition(id), opbus.Status{Reason: ReasonReconciling, Message: "the handler " + id + " has not run yet"}, gen, n.abnormal[id]))
	}
	return out
}

// mergeConditions applies want to the list existing (status.conditions as
// found) by the rules of meta.SetStatusCondition: lastTransitionTime
// changes only when a condition's status does. Conditions of a type in
// ours that want does not hold are removed; conditions of other types are
// kept exactly as they are, in their places. It returns the new list and
// whether it differs from existing.
func mergeConditions(existing []any, want []metav1.Condition, ours map[string]bool) ([]any, bool) {
	var mine []metav1.Condition
	for _, e := range existing {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		if !ours[t] {
			continue
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			continue // unreadable: written afresh
		}
		mine = append(mine, c)
	}
	if mine == nil {
		mine = []metav1.Condition{}
	}
	wanted := map[string]bool{}
	for _, c := range want {
		wanted[c.Type] = true
		meta.SetStatusCondition(&mine, c)
	}
	for _, c := range slices.Clone(mine) {
		if !wanted[c.Type] {
			meta.RemoveStatusCondition(&mine, c.Type)
		}
	}

	out := make([]any, 0, len(existing)+len(want))
	placed := map[string]bool{}
	put := func(t string) {
		if placed[t] {
			return
		}
		if c := meta.FindStatusCondition(mine, t); c != nil {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
			if err == nil {
				out = append(out, u)
			}
		}
		placed[t] = true
	}
	for _, e := range existing {
		m, ok := e.(map[string]any)
		t, _ := m["type"].(string)
		if !ok || !ours[t] {
			out = append(out, e)
			continue
		}
		put(t)
	}
	for _, c := range want {
		put(c.Type)
	}
	return out, !opbus.Equal(existing, out)
}
