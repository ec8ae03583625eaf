package k8s

import (
	"errors"
	"slices"
	"testing"

	"github.com/opbus/opbus"
)

// state returns a Widget state of uid u at resource version rv, with the
// record annotation rec (none if nil), the status annotation st (none if
// nil) and the conditions conds (none if nil).
func state(u, rv string, rec, st *string, conds []any) map[string]any {
	meta := map[string]any{"name": "w", "namespace": "ns", "uid": u, "resourceVersion": rv, "generation": int64(4)}
	annots := map[string]any{}
	if rec != nil {
		annots[AnnotationRecord] = *rec
	}
	if st != nil {
		annots[AnnotationStatus] = *st
	}
	meta["annotations"] = annots
	obj := map[string]any{"metadata": meta}
	if conds != nil {
		obj["status"] = map[string]any{"conditions": conds}
	}
	return obj
}

func ptr(s string) *string { return &s }

// TestRecordLost checks when the store writes a record back: only the
// record it holds for the object's own uid, only when the object shows
// another value or none, never while a Save is under way or failed, and
// never from a state older than its last Save.
func TestRecordLost(t *testing.T) {
	key := opbus.Key{Kind: "Widget.example.com", Namespace: "ns", Name: "w"}
	rec := `{"v":1,"inc":"u1","digests":{"size":"x"}}`
	tests := []struct {
		name  string
		setup func(st *store)
		obj   map[string]any
		want  bool
	}{
		{"nothing known", func(*store) {}, state("u1", "5", nil, nil, nil), false},
		{"the record shown", nil, state("u1", "5", ptr(rec), nil, nil), false},
		{"the record removed", nil, state("u1", "5", nil, nil, nil), true},
		{"the record emptied", nil, state("u1", "5", ptr(""), nil, nil), true},
		{"the record changed", nil, state("u1", "5", ptr(`{"v":1}`), nil, nil), true},
		{"another incarnation", nil, state("u2", "5", nil, nil, nil), false},
		{"a Save under way", func(st *store) {
			st.noteSaving(key, "u1", rec)
		}, state("u1", "5", nil, nil, nil), false},
		{"a Save failed", func(st *store) {
			st.noteSaving(key, "u1", rec)
			st.doneSaving(key, errors.New("refused"))
		}, state("u1", "5", nil, nil, nil), false},
		{"a state older than the last Save", func(st *store) {
			st.noteSaving(key, "u1", rec)
			st.doneSaving(key, nil)
			st.remember(key, "9", []byte(rec))
		}, state("u1", "7", nil, nil, nil), false},
		{"a state as new as the last Save", func(st *store) {
			st.noteSaving(key, "u1", rec)
			st.doneSaving(key, nil)
			st.remember(key, "9", []byte(rec))
		}, state("u1", "10", nil, nil, nil), true},
		{"a loaded record", func(st *store) {
			st.noteLoaded(key, "u1", rec)
			st.noteLoaded(key, "u1", `{"v":1,"inc":"u1"}`) // a later read: an edit, not the bus's
		}, state("u1", "5", nil, nil, nil), true},
		{"a loaded record of another incarnation", func(st *store) {
			st.noteLoaded(key, "u1", `{"v":1,"inc":"u0"}`)
		}, state("u1", "5", nil, nil, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := fakeSource(t, widgets, "Widget", StatusConditions)
			st := s.store
			setup := tt.setup
			if setup == nil {
				setup = func(st *store) { st.noteLoaded(key, "u1", rec) }
			}
			setup(st)
			got, lost := st.recordLost(key, tt.obj)
			if lost != tt.want {
				t.Fatalf("lost = %v, want %v", lost, tt.want)
			}
			if lost && got != rec {
				t.Errorf("written back %s, want %s", got, rec)
			}
		})
	}
}

// condition returns a condition as the API server holds it.
func cond(typ, status, reason, msg string, gen int64) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
		"observedGeneration": gen, "lastTransitionTime": "2026-01-01T00:00:00Z"}
}

// TestConditionsLost checks when the sink writes its conditions back:
// only those it was last asked to show, on the object of their uid, when
// the object shows other ones; never while a write is under way or
// failed, nor from a state older than its last write; other writers'
// conditions are kept in place.
func TestConditionsLost(t *testing.T) {
	key := opbus.Key{Kind: "Widget.example.com", Namespace: "ns", Name: "w"}
	slots := opbus.Slots{"size": opbus.Blocked("too big")}
	shown := []any{cond("Ready", "False", "Blocked", "too big", 3), cond("Size", "False", "Blocked", "too big", 3)}
	theirs := cond("Theirs", "True", "Fine", "", 1)
	asked := func(sk *sink) { sk.keep(key, "u1", 3, slots); sk.wrote(key, "5", nil) }
	tests := []struct {
		name  string
		setup func(sk *sink)
		obj   map[string]any
		want  []string // the condition types written back, in order; nil: none
	}{
		{"nothing asked", func(*sink) {}, state("u1", "6", nil, nil, nil), nil},
		{"the conditions shown", asked, state("u1", "6", nil, nil, shown), nil},
		{"the list removed", asked, state("u1", "6", nil, nil, nil), []string{"Ready", "Size"}},
		{"the list emptied", asked, state("u1", "6", nil, nil, []any{}), []string{"Ready", "Size"}},
		{"Ready changed", asked, state("u1", "6", nil, nil, []any{cond("Ready", "True", "Active", "", 3), shown[1]}), []string{"Ready", "Size"}},
		{"an older generation", asked, state("u1", "6", nil, nil, []any{shown[0], cond("Size", "False", "Blocked", "too big", 2)}), []string{"Ready", "Size"}},
		{"another writer's kept", asked, state("u1", "6", nil, nil, []any{theirs}), []string{"Theirs", "Ready", "Size"}},
		{"another incarnation", asked, state("u2", "6", nil, nil, nil), nil},
		{"a state older than the last write", asked, state("u1", "4", nil, nil, nil), nil},
		{"a write under way", func(sk *sink) { asked(sk); sk.keep(key, "u1", 3, slots) }, state("u1", "6", nil, nil, nil), nil},
		{"a write failed", func(sk *sink) {
			asked(sk)
			sk.keep(key, "u1", 3, slots)
			sk.wrote(key, "", errors.New("refused"))
		}, state("u1", "6", nil, nil, nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := fakeSource(t, widgets, "Widget", StatusConditions)
			tt.setup(s.sink)
			merged, lost := s.sink.conditionsLost(key, tt.obj)
			if lost != (tt.want != nil) {
				t.Fatalf("lost = %v, want %v", lost, tt.want != nil)
			}
			var types []string
			for _, e := range merged {
				m := e.(map[string]any)
				types = append(types, m["type"].(string))
				if m["type"] == "Theirs" {
					continue
				}
				if m["status"] != "False" || m["reason"] != "Blocked" || m["message"] != "too big" || m["observedGeneration"] != int64(3) {
					t.Errorf("written back %v, want False, Blocked, too big, generation 3", m)
				}
			}
			if lost && !slices.Equal(types, tt.want) {
				t.Errorf("written back %v, want %v", types, tt.want)
			}
		})
	}
}

// TestStatusLost checks when the sink writes AnnotationStatus back: when it
// is removed or shows another status, not when it shows the one last
// written; a zero status is written back as no annotation.
func TestStatusLost(t *testing.T) {
	key := opbus.Key{Kind: "Pod", Namespace: "ns", Name: "w"}
	blocked := `{"level":"blocked","message":"too big"}`
	tests := []struct {
		name    string
		overall opbus.Status
		obj     map[string]any
		want    any // the value written back; "-" for none
	}{
		{"shown", opbus.Blocked("too big"), state("u1", "6", nil, ptr(blocked), nil), "-"},
		{"removed", opbus.Blocked("too big"), state("u1", "6", nil, nil, nil), blocked},
		{"changed", opbus.Blocked("too big"), state("u1", "6", nil, ptr(`{"level":"active"}`), nil), blocked},
		{"added where none is shown", opbus.Status{}, state("u1", "6", nil, ptr(blocked), nil), nil},
		{"none shown", opbus.Status{}, state("u1", "6", nil, nil, nil), "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := fakeSource(t, pods, "Pod", StatusAnnotation)
			s.sink.keep(key, "u1", 0, nil)
			s.sink.setShown(key, tt.overall)
			s.sink.wrote(key, "5", nil)
			v, lost := s.sink.statusLost(key, tt.obj)
			if !lost {
				if tt.want != "-" {
					t.Fatalf("not written back, want %v", tt.want)
				}
				return
			}
			if v != tt.want {
				t.Errorf("written back %v, want %v", v, tt.want)
			}
		})
	}
}
