package k8s

import (
	"testing"

	"github.com/opbus/opbus"
)

// TestLevelsChanged: a level change is reported once; a message change at
// the same level is not; an object not known yet is compared with the
// summary of the record it held before the pass, so a restart emits no
// Event for an unchanged level.
func TestLevelsChanged(t *testing.T) {
	k := opbus.Key{Kind: "Widget", Namespace: "ns", Name: "w"}
	rec := func(slots string) map[string]any {
		return map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationRecord: `{"v":3,"slots":` + slots + `}`}}}
	}
	var l levels
	steps := []struct {
		obj     map[string]any
		overall opbus.Status
		was     opbus.Level
		changed bool
	}{
		{rec(`{"a":{"level":"blocked","message":"m","reason":"TooBig"}}`), opbus.Blocked("m2"), opbus.LevelBlocked, false}, // restart, same level
		{nil, opbus.Active("ok"), opbus.LevelBlocked, true},
		{nil, opbus.Active("still ok"), opbus.LevelActive, false},
		{rec(`{}`), opbus.ErrorStatus("x"), opbus.LevelActive, true}, // known: the record is not read again
	}
	for i, s := range steps {
		was, changed := l.changed(k, s.obj, AnnotationRecord, s.overall)
		if was.Level != s.was || changed != s.changed {
			t.Errorf("step %d: was %v, changed %v; want %v, %v", i, was.Level, changed, s.was, s.changed)
		}
	}
	l.forget(k)
	if _, changed := l.changed(k, nil, AnnotationRecord, opbus.ErrorStatus("x")); !changed {
		t.Error("after forget, without a record: no change reported from the zero status")
	}
	if got := recordSummary(rec(`{"a":{"level":"blocked","reason":"TooBig"}}`), AnnotationRecord); got.Reason != "TooBig" {
		t.Errorf("recordSummary reason %q, want TooBig", got.Reason)
	}
}

// TestConditionReason: a slot's reason is its condition's; without one,
// the level's word.
func TestConditionReason(t *testing.T) {
	if got := condition("Size", opbus.Blocked("x").WithReason("TooBig"), 1, false).Reason; got != "TooBig" {
		t.Errorf("reason %q, want TooBig", got)
	}
	if got := condition("Size", opbus.Blocked("x"), 1, false).Reason; got != "Blocked" {
		t.Errorf("reason %q, want Blocked", got)
	}
}
