package k8s

import (
	"errors"
	"strings"
	"testing"

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
