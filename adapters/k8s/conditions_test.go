package k8s

import (
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opbus/opbus"
)

func TestConditionType(t *testing.T) {
	cases := []struct {
		id, want, why string
	}{
		{"crash-watch", "crash-watch", "a valid name is kept"},
		{"example.com/crash-watch", "example.com/crash-watch", "a qualified name is kept"},
		{"Size_2", "Size_2", "upper case, digits and underscores are valid"},
		{"my slot", "my-slot-", "a space is replaced, and a hash suffix added"},
		{"Ready", "Ready-", "the summary's type is never a slot's"},
		{"-x-", "x-", "a name must start and end with a letter or digit"},
		{"!!!", "slot-", "nothing usable is left"},
		{"a/b/c", "a-b-c-", "one slash at most, after a DNS prefix"},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			got := ConditionType(c.id)
			if c.want[len(c.want)-1] == '-' {
				if len(got) != len(c.want)+8 || got[:len(c.want)] != c.want {
					t.Errorf("ConditionType(%q) = %q, want %q and 8 hex digits (%s)", c.id, got, c.want, c.why)
				}
			} else if got != c.want {
				t.Errorf("ConditionType(%q) = %q, want %q (%s)", c.id, got, c.want, c.why)
			}
		})
	}
	if ConditionType("a b") == ConditionType("a-b") {
		t.Errorf("two slots share condition type %q", ConditionType("a b"))
	}
	long := ConditionType(string(make([]byte, 400)) + "x")
	if len(long) > 63 {
		t.Errorf("ConditionType of a long ID is %d bytes, want at most 63", len(long))
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
	ours := map[string]bool{"Ready": true, "size": true, "phase": true}
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(c metav1.Condition) metav1.Condition { c.LastTransitionTime = then; return c }
	foreign := map[string]any{"type": "Progressing", "status": "True", "lastProbeTime": nil, "extra": "kept"}

	existing := append(toList(t,
		at(condition("Ready", opbus.Blocked("size 5"), 1)),
		at(condition("size", opbus.Blocked("size 5"), 1)),
	), foreign)
	existing = append(existing, toList(t, at(condition("phase", opbus.Waiting("no phase"), 1)))...)

	t.Run("unchanged", func(t *testing.T) {
		want := wantConditions(opbus.Blocked("size 5"), opbus.Slots{"size": opbus.Blocked("size 5"), "phase": opbus.Waiting("no phase")}, 1, namesFor(""), ours)
		if _, changed := mergeConditions(existing, want, ours); changed {
			t.Error("changed = true for the same conditions: the status would be patched for nothing")
		}
	})
	t.Run("message only", func(t *testing.T) {
		want := wantConditions(opbus.Blocked("size 6"), opbus.Slots{"size": opbus.Blocked("size 6"), "phase": opbus.Waiting("no phase")}, 2, namesFor(""), ours)
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
		want := wantConditions(opbus.Active("ok"), opbus.Slots{"size": opbus.Active("ok")}, 2, namesFor(""), ours)
		out, changed := mergeConditions(existing, want, ours)
		if !changed {
			t.Fatal("changed = false")
		}
		got := fromList(t, out)
		if r := got["Ready"]; r.Status != metav1.ConditionTrue || r.Reason != "Active" || r.LastTransitionTime.Equal(&then) {
			t.Errorf("Ready = %+v: want True, Active and a new lastTransitionTime", r)
		}
		if _, ok := got["phase"]; ok {
			t.Error("the condition of a cleared slot is still there")
		}
		if len(out) != 3 {
			t.Fatalf("%d conditions, want Ready, size and the foreign one", len(out))
		}
		if f := out[1].(map[string]any); f["type"] != "size" {
			t.Errorf("conditions out of place: %v", out)
		}
		if f := out[2].(map[string]any); f["extra"] != "kept" {
			t.Errorf("another writer's condition was changed: %v", f)
		}
	})
	t.Run("first", func(t *testing.T) {
		want := wantConditions(opbus.Status{}, nil, 3, namesFor(""), ours)
		out, changed := mergeConditions(nil, want, ours)
		got := fromList(t, out)
		if !changed || len(got) != 1 || got["Ready"].Status != metav1.ConditionUnknown || got["Ready"].Reason != "Unknown" {
			t.Errorf("got %v, %v; want one Ready Unknown", got, changed)
		}
	})
	t.Run("undeclared slot", func(t *testing.T) {
		want := wantConditions(opbus.Active(""), opbus.Slots{"collector": opbus.Active("")}, 1, namesFor(""), ours)
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
	ours := map[string]bool{ConditionReady: true, "a": true, "opbus": true}
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
		{"b removed", `{"v":3,"slots":{"a":{"level":"active"},"b":{"level":"blocked"}}}`, opbus.Slots{"a": opbus.Active("")}, []string{"b"}},
		{"renamed, type mapped", `{"v":3,"slots":{"my slot":{"level":"blocked"}}}`, nil, []string{ConditionType("my slot")}},
		{"a slot still registered but empty now", `{"v":3,"slots":{"a":{"level":"active"}}}`, nil, nil},
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
