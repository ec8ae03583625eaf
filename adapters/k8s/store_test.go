package k8s

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/opbus/opbus"
)

func TestCheckSize(t *testing.T) {
	key := opbus.Key{Kind: "Pod", Namespace: "ns", Name: "web"}
	obj := func(ann map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"annotations": ann}}
	}
	room := MaxAnnotationBytes - len(AnnotationRecord)
	cases := []struct {
		name string
		obj  map[string]any
		size int
		ok   bool
	}{
		{"no annotations, exactly full", obj(nil), room, true},
		{"no annotations, one byte over", obj(nil), room + 1, false},
		{"the old record does not count", obj(map[string]any{AnnotationRecord: strings.Repeat("x", 200<<10)}), 100 << 10, true},
		{"others count, keys too", obj(map[string]any{"k": strings.Repeat("x", 100)}), room - 101, true},
		{"others count, one byte over", obj(map[string]any{"k": strings.Repeat("x", 100)}), room - 100, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkSize(key, c.obj, AnnotationRecord, c.size)
			if (err == nil) != c.ok {
				t.Fatalf("checkSize(%d bytes) = %v, want ok %v", c.size, err, c.ok)
			}
			if err != nil && (!errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "Pod ns/web") || !strings.Contains(err.Error(), "256 KiB")) {
				t.Errorf("error %q: want ErrTooLarge naming the object and the limit", err)
			}
		})
	}
}

func TestDropPending(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"v":1,"digests":{"a":"x"}}`, `{"v":1,"digests":{"a":"x"}}`},
		{`{"v":1,"pending":{"object":{"metadata":{"name":"a"}}},"slots":{}}`, `{"slots":{},"v":1}`},
		{`{"v":1,"values":{"n":"\"pending\""}}`, `{"v":1,"values":{"n":"\"pending\""}}`},
		{`not json "pending"`, `not json "pending"`},
	}
	for _, c := range cases {
		got, err := dropPending([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("dropPending(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestOlderThan(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"9", "10", true},
		{"10", "10", false},
		{"11", "10", false},
		{"abc", "def", true}, // not comparable: only the version written proves it
		{"def", "def", false},
		{"", "10", true},
	}
	for _, c := range cases {
		if got := olderThan(c.a, c.b); got != c.want {
			t.Errorf("olderThan(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestRecordIncAndBare(t *testing.T) {
	for _, tc := range []struct {
		data string
		inc  string
		bare bool
	}{
		{`{"v":2,"inc":"u1"}`, "u1", true},
		{`{"v":2}`, "", true},
		{`{"v":2,"inc":"u1","digests":{"h":"x"}}`, "u1", false},
		{`not json`, "", false},
	} {
		if got, _ := recordInc([]byte(tc.data)); got != tc.inc {
			t.Errorf("recordInc(%s): got %q, want %q", tc.data, got, tc.inc)
		}
		if got := bare([]byte(tc.data)); got != tc.bare {
			t.Errorf("bare(%s): got %v, want %v", tc.data, got, tc.bare)
		}
	}
}

func TestIsGone(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"not found", apierrors.NewNotFound(gr, "p"), true},
		{"another uid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{
			field.Invalid(field.NewPath("metadata", "uid"), "u1", "field is immutable")}), true},
		{"another invalid field", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{
			field.Invalid(field.NewPath("spec", "x"), "1", "bad")}), false},
		{"a conflict", apierrors.NewConflict(gr, "p", nil), false},
		{"nil", nil, false},
	} {
		if got := isGone(tc.err); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRefusedForGood(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"too large here", fmt.Errorf("k8s: x: %w", ErrTooLarge), true},
		{"denied by admission", apierrors.NewForbidden(gr, "p", errors.New("denied by policy")), true},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), true},
		{"too large there", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), true},
		{"a conflict", apierrors.NewConflict(gr, "p", nil), false},
		{"unavailable", apierrors.NewServiceUnavailable("x"), false},
		{"throttled", apierrors.NewTooManyRequests("x", 1), false},
	} {
		if got := refusedForGood(tc.err); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
