package k8s

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
)

// TestConditionType: slot ids become CamelCase condition types however
// they are spelled; long or wordless ids get a hash.
func TestConditionType(t *testing.T) {
	cases := []struct {
		id, want, why string
	}{
		{"crash-watch", "CrashWatch", "dashes separate words"},
		{"crash_watch", "CrashWatch", "so do underscores"},
		{"crash.watch", "CrashWatch", "and dots"},
		{"probe health", "ProbeHealth", "and spaces"},
		{"CrashWatch", "CrashWatch", "CamelCase is kept"},
		{"crashWatch", "CrashWatch", "lower camelCase gets its first letter up"},
		{"size2", "Size2", "digits are kept"},
		{"example.com/crash-watch", "ExampleComCrashWatch", "a prefix is words too"},
		{"ready", "Ready", "the summary's type: Run refuses it"},
		{"-x-", "X", "separators at the ends vanish"},
		{"!!!", "Slot", "nothing usable is left: a hash"},
		{"été", "T", "non-ASCII letters separate words"},
		{strings.Repeat("ab-", 40), strings.Repeat("Ab", 27) + "A", "too long: cut, and a hash"},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			got := ConditionType(c.id)
			hashed := c.want == "Slot" || len(c.want) > 50
			if hashed {
				if len(got) != len(c.want)+8 || got[:len(c.want)] != c.want {
					t.Errorf("ConditionType(%q) = %q, want %q and 8 hex digits (%s)", c.id, got, c.want, c.why)
				}
			} else if got != c.want {
				t.Errorf("ConditionType(%q) = %q, want %q (%s)", c.id, got, c.want, c.why)
			}
			if errs := validation.IsQualifiedName(got); len(errs) > 0 {
				t.Errorf("ConditionType(%q) = %q is not a qualified name: %v", c.id, got, errs)
			}
		})
	}
	if a, b := ConditionType(strings.Repeat("x", 70)), ConditionType(strings.Repeat("x", 71)); a == b || len(a) != 63 {
		t.Errorf("long ids give %q and %q, want two types of 63 bytes", a, b)
	}
}

// TestConditionTypesClash: two slots giving one condition type, or a slot
// giving Ready, are refused with an error naming both; distinct ones are
// not.
func TestConditionTypesClash(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ids    []string
		errHas []string
	}{
		{"distinct", []string{"opbus", "crash-watch", "size"}, nil},
		{"same id twice", []string{"a", "a"}, nil},
		{"spellings", []string{"opbus", "crash-watch", "crash_watch"}, []string{`"crash-watch"`, `"crash_watch"`, "CrashWatch", "rename"}},
		{"ready", []string{"opbus", "ready"}, []string{`"ready"`, "Ready", "summary"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []*names{namesFor(""), namesFor("audit")} {
				_, err := conditionTypes(n, tc.ids)
				if tc.errHas == nil {
					if err != nil {
						t.Errorf("conditionTypes(%q): %v, want no error", tc.ids, err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("conditionTypes(%q): no error, want one naming %q", tc.ids, tc.errHas)
				}
				for _, w := range tc.errHas {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
			}
		})
	}
}

// TestLegacyConditionTypes: the former spellings of a slot's condition
// type are recognised (once it differs from today's), and only conditions
// of those types with a level's word as reason count as the adapter's.
func TestLegacyConditionTypes(t *testing.T) {
	n := namesFor("")
	ours := map[string]bool{ConditionReady: true, "CrashWatch": true, "Size": true, "MySlot": true}
	legacy := legacyConditionTypes(n, []string{"crash-watch", "Size", "my slot"}, ours)
	if want := map[string]bool{"crash-watch": true, "my-slot-14b6f228": true}; !maps.Equal(legacy, want) {
		t.Errorf("legacy types %v, want %v", legacy, want)
	}
	if got := namesFor("audit").legacyCondition("crash-watch"); got != "audit.opbus.dev/crash-watch" {
		t.Errorf("legacy type of a named operator %q, want audit.opbus.dev/crash-watch", got)
	}
	obj := map[string]any{"status": map[string]any{"conditions": toList(t,
		metav1.Condition{Type: "crash-watch", Status: metav1.ConditionFalse, Reason: "Blocked"},
		metav1.Condition{Type: "my-slot-14b6f228", Status: metav1.ConditionTrue, Reason: "SomeoneElses"},
		metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "Active"},
	)}}
	if got, want := legacyFound(obj, legacy), map[string]bool{"crash-watch": true}; !maps.Equal(got, want) {
		t.Errorf("legacyFound = %v, want %v", got, want)
	}
}

func toList(t *testing.T, cs ...metav1.Condition) []any {
	t.Helper()
	var out []any
	for _, c := range cs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func fromList(t *testing.T, l []any) map[string]metav1.Condition {
	t.Helper()
	out := map[string]metav1.Condition{}
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			t.Fatalf("element %v is not a map", e)
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			t.Fatal(err)
		}
		out[c.Type] = c
	}
	return out
}

func TestMergeConditions(t *testing.T) {
	ours := map[string]bool{"Ready": true, "Size": true, "Phase": true}
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(c metav1.Condition) metav1.Condition { c.LastTransitionTime = then; return c }
	foreign := map[string]any{"type": "Progressing", "status": "True", "lastProbeTime": nil, "extra": "kept"}

	existing := append(toList(t,
		at(condition("Ready", opbus.Blocked("size 5"), 1, false)),
		at(condition("Size", opbus.Blocked("size 5"), 1, false)),
	), foreign)
	existing = append(existing, toList(t, at(condition("Phase", opbus.Waiting("no phase"), 1, false)))...)

	t.Run("unchanged", func(t *testing.T) {
		want := wantConditions(opbus.Blocked("size 5"), opbus.Slots{"size": opbus.Blocked("size 5"), "phase": opbus.Waiting("no phase")}, 1, namesFor(""), ours, nil)
		if _, changed := mergeConditions(existing, want, ours); changed {
			t.Error("changed = true for the same conditions: the status would be patched for nothing")
		}
	})
	t.Run("message only", func(t *testing.T) {
		want := wantConditions(opbus.Blocked("size 6"), opbus.Slots{"size": opbus.Blocked("size 6"), "phase": opbus.Waiting("no phase")}, 2, namesFor(""), ours, nil)
		out, changed := mergeConditions(existing, want, ours)
		if !changed {
			t.Fatal("changed = false")
		}
		got := fromList(t, out)
		if r := got["Ready"]; r.Message != "size 6" || r.ObservedGeneration != 2 || !r.LastTransitionTime.Equal(&then) {
			t.Errorf("Ready = %+v: want the new message and generation, and lastTransitionTime kept at %v", r, then)
		}
	})
	t.Run("status change, slot gone", func(t *testing.T) {
		want := wantConditions(opbus.Active("ok"), opbus.Slots{"size": opbus.Active("ok")}, 2, namesFor(""), ours, nil)
		out, changed := mergeConditions(existing, want, ours)
		if !changed {
			t.Fatal("changed = false")
		}
		got := fromList(t, out)
		if r := got["Ready"]; r.Status != metav1.ConditionTrue || r.Reason != "Active" || r.LastTransitionTime.Equal(&then) {
			t.Errorf("Ready = %+v: want True, Active and a new lastTransitionTime", r)
		}
		if _, ok := got["Phase"]; ok {
			t.Error("the condition of a cleared slot is still there")
		}
		if len(out) != 3 {
			t.Fatalf("%d conditions, want Ready, size and the foreign one", len(out))
		}
		if f := out[1].(map[string]any); f["type"] != "Size" {
			t.Errorf("conditions out of place: %v", out)
		}
		if f := out[2].(map[string]any); f["extra"] != "kept" {
			t.Errorf("another writer's condition was changed: %v", f)
		}
	})
	t.Run("first", func(t *testing.T) {
		want := wantConditions(opbus.Status{}, nil, 3, namesFor(""), ours, nil)
		out, changed := mergeConditions(nil, want, ours)
		got := fromList(t, out)
		if !changed || len(got) != 1 || got["Ready"].Status != metav1.ConditionUnknown || got["Ready"].Reason != "Unknown" {
			t.Errorf("got %v, %v; want one Ready Unknown", got, changed)
		}
	})
	t.Run("undeclared slot", func(t *testing.T) {
		want := wantConditions(opbus.Active(""), opbus.Slots{"collector": opbus.Active("")}, 1, namesFor(""), ours, nil)
		if len(want) != 1 {
			t.Errorf("a condition for a slot the bus does not ignore: %v", want)
		}
	})
}

func TestReason(t *testing.T) {
	for l, want := range map[opbus.Level]string{
		opbus.LevelUnknown: "Unknown", opbus.LevelActive: "Active", opbus.LevelWaiting: "Waiting",
		opbus.LevelMaintenance: "Maintenance", opbus.LevelBlocked: "Blocked", opbus.LevelError: "Error",
	} {
		if got := reason(l); got != want {
			t.Errorf("reason(%v) = %q, want %q", l, got, want)
		}
	}
}

func TestGoneConditions(t *testing.T) {
	ours := map[string]bool{ConditionReady: true, "A": true, "Opbus": true}
	tests := []struct {
		name   string
		record string // the annotation; "-" for none
		slots  opbus.Slots
		want   []string
	}{
		{"no record", "-", opbus.Slots{"a": opbus.Active("")}, nil},
		{"empty record", "", opbus.Slots{"a": opbus.Active("")}, nil},
		{"unreadable record", "{", opbus.Slots{"a": opbus.Active("")}, nil},
		{"nothing removed", `{"v":3,"slots":{"a":{"level":"active"}}}`, opbus.Slots{"a": opbus.Active("")}, nil},
		{"b removed", `{"v":3,"slots":{"a":{"level":"active"},"b":{"level":"blocked"}}}`, opbus.Slots{"a": opbus.Active("")}, []string{"B", "b"}}, // both spellings
		{"renamed, type mapped", `{"v":3,"slots":{"my slot":{"level":"blocked"}}}`, nil, []string{"MySlot", "my-slot-14b6f228"}},
		{"a slot still registered but empty now", `{"v":3,"slots":{"a":{"level":"active"}}}`, nil, []string{"a"}}, // its former spelling only
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := map[string]any{"metadata": map[string]any{}}
			if tt.record != "-" {
				obj["metadata"] = map[string]any{"annotations": map[string]any{AnnotationRecord: tt.record}}
			}
			got := slices.Sorted(maps.Keys(goneConditions(obj, tt.slots, namesFor(""), ours)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestConditionStatusPolarity: a normal-true condition is True when
// active and False when the slot needs attention; an abnormal-true one the
// other way round; both are Unknown while undecided or in progress.
func TestConditionStatusPolarity(t *testing.T) {
	for l, want := range map[opbus.Level][2]metav1.ConditionStatus{
		opbus.LevelUnknown:     {metav1.ConditionUnknown, metav1.ConditionUnknown},
		opbus.LevelMaintenance: {metav1.ConditionUnknown, metav1.ConditionUnknown},
		opbus.LevelActive:      {metav1.ConditionTrue, metav1.ConditionFalse},
		opbus.LevelWaiting:     {metav1.ConditionFalse, metav1.ConditionTrue},
		opbus.LevelBlocked:     {metav1.ConditionFalse, metav1.ConditionTrue},
		opbus.LevelError:       {metav1.ConditionFalse, metav1.ConditionTrue},
	} {
		if got := [2]metav1.ConditionStatus{conditionStatus(l, false), conditionStatus(l, true)}; got != want {
			t.Errorf("%v: normal, abnormal = %v, want %v", l, got, want)
		}
	}
}

// TestConditionsOptionsRefused: a condition type that is not a qualified
// name, two slots of one type, and a summary both named and dropped are
// refused by New, naming them.
func TestConditionsOptionsRefused(t *testing.T) {
	base := Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Resources: []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}}}
	for _, c := range []struct {
		conds     map[string]Condition
		summary   string
		noSummary bool
		want      string
	}{
		{map[string]Condition{"a": {Type: "not a type!"}}, "", false, `Options.Conditions["a"].Type "not a type!" is not a condition type`},
		{map[string]Condition{"a": {Type: "Available"}, "b": {Type: "Available"}}, "", false, `slots "a" and "b" both have condition type Available`},
		{nil, "ready", true, "NoSummaryCondition is set and SummaryCondition names"},
	} {
		o := base
		o.Conditions, o.SummaryCondition, o.NoSummaryCondition = c.conds, c.summary, c.noSummary
		if _, err := New(&o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New with %+v: %v, want an error containing %q", c.conds, err, c.want)
		}
	}
}
