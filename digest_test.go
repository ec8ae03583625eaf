package opbus

import (
	"crypto/sha256"
	"encoding/json"
	"hash/fnv"
	"testing"

	"github.com/opbus/opbus/internal/canonical"
)

func TestDigestCanonical(t *testing.T) {
	cmp, err := NewComparer(&CompareOptions{
		Ignore:   []string{`metadata.annotations["opbus.dev/record"]`, "metadata.resourceVersion"},
		ListKeys: map[string]string{"containers": "name"},
	})
	must(t, err)
	d := func(obj any, fields ...string) digest {
		t.Helper()
		var ps []Path
		for _, f := range fields {
			ps = append(ps, MustParsePath(f))
		}
		got, err := digestOf(cmp, obj, ps, "")
		must(t, err)
		return got
	}
	a := obj(t, `{"metadata":{"resourceVersion":"1","annotations":{"opbus.dev/record":"x","k":"v"}},
		"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}],"n":3}}`)
	same := map[string]any{
		"metadata": map[string]any{"resourceVersion": "2", "annotations": map[string]any{"opbus.dev/record": "y", "k": "v"}},
		"spec": map[string]any{"n": int64(3), "containers": []any{
			map[string]any{"image": "2", "name": "b"}, map[string]any{"name": "a", "image": json.Number("1")}}},
	}
	same["spec"].(map[string]any)["containers"].([]any)[1].(map[string]any)["image"] = "1"
	if d(a) != d(same) {
		t.Error("ignored paths, key order, keyed-list order and number types changed the whole-object digest")
	}
	if d(a, "metadata.annotations") != d(same, "metadata.annotations") {
		t.Error("an ignored path inside a subscribed field changed its digest")
	}
	for _, tc := range []struct{ name, other string }{
		{"absent vs null", `{"x":null}`},
		{"null vs empty string", `{"x":""}`},
		{"string vs number", `{"x":"1"}`},
		{"list vs map", `{"x":{}}`},
		{"empty list vs empty map", `{"x":[]}`},
	} {
		base := d(obj(t, `{}`), "x")
		if tc.name != "absent vs null" {
			base = d(obj(t, `{"x":1}`), "x")
			if tc.name == "list vs map" || tc.name == "null vs empty string" {
				base = d(obj(t, `{"x":null}`), "x")
			}
		}
		if d(obj(t, tc.other), "x") == base {
			t.Errorf("%s: same digest", tc.name)
		}
	}
	// prefix-freedom: ["ab"] vs ["a","b"]; {"a":"b"} vs {"ab":""}
	if d(obj(t, `{"x":["ab"]}`), "x") == d(obj(t, `{"x":["a","b"]}`), "x") ||
		d(obj(t, `{"x":{"a":"b"}}`), "x") == d(obj(t, `{"x":{"ab":""}}`), "x") {
		t.Error("encoding is not prefix-free")
	}
	if d(a, "spec.n", "spec.containers") == d(a, "spec.containers", "spec.n") {
		t.Error("field order should be part of the digest")
	}
	wild := d(a, "spec.containers[*].image")
	if wild != d(same, "spec.containers[*].image") {
		t.Error("a wildcard field over a keyed list depends on element order")
	}
	if _, err := digestOf(cmp, map[string]any{"x": make(chan int)}, nil, ""); err == nil {
		t.Error("an unsupported value must be an error")
	}
}

// BenchmarkDigest compares the chosen hash with FNV-1a over the canonical
// encoding of the Pod fixture, to back the choice recorded on digest.
func BenchmarkDigest(b *testing.B) {
	pod := loadFixture(b, "pod-old.json")
	b.Run("encode+sha256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := digestOf(defaultComparer, pod, nil, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	e := &canonical.Encoder{}
	e.Reset(&defaultComparer.m)
	if err := e.Value(pod, 0, ""); err != nil {
		b.Fatal(err)
	}
	buf := e.Buf
	b.Run("sha256-only", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			sha256.Sum256(buf)
		}
	})
	b.Run("fnv1a64-only", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		h := fnv.New64a()
		for b.Loop() {
			h.Reset()
			h.Write(buf)
			h.Sum64()
		}
	})
}

// TestDigestDistinguishes checks inputs that once shared a digest: the
// digest must tell apart values, subscribed fields and handler revisions.
func TestDigestDistinguishes(t *testing.T) {
	tests := []struct {
		name       string
		obj1, obj2 any
		fields1    []string
		fields2    []string
		rev1, rev2 string
	}{
		{
			name:    "map keys holding NUL under a wildcard",
			obj1:    map[string]any{"x": map[string]any{"a": "xy\x00n"}},
			obj2:    map[string]any{"x": map[string]any{"a\x00s\x04xy": nil}},
			fields1: []string{"x[*]"}, fields2: []string{"x[*]"},
		},
		{
			name:    "subscription moved to another field with the same value",
			obj1:    map[string]any{"config": map[string]any{"tls": true, "debug": true}},
			obj2:    map[string]any{"config": map[string]any{"tls": true, "debug": true}},
			fields1: []string{"config.tls"}, fields2: []string{"config.debug"},
		},
		{
			name:    "absent field moved",
			obj1:    map[string]any{},
			obj2:    map[string]any{},
			fields1: []string{"a"}, fields2: []string{"b"},
		},
		{
			name:    "revision set",
			obj1:    map[string]any{"a": 1},
			obj2:    map[string]any{"a": 1},
			fields1: []string{"a"}, fields2: []string{"a"},
			rev1: "", rev2: "v2",
		},
		{
			name: "revision changed, whole object",
			obj1: map[string]any{"a": 1},
			obj2: map[string]any{"a": 1},
			rev1: "v1", rev2: "v2",
		},
		{
			name:    "revision is not confused with the fields",
			obj1:    map[string]any{"a": 1},
			obj2:    map[string]any{"a": 1},
			fields1: []string{"a"}, fields2: []string{"a"},
			rev1: "F", rev2: "",
		},
	}
	paths := func(fs []string) []Path {
		var ps []Path
		for _, f := range fs {
			ps = append(ps, MustParsePath(f))
		}
		return ps
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d1, err := digestOf(defaultComparer, tc.obj1, paths(tc.fields1), tc.rev1)
			must(t, err)
			d2, err := digestOf(defaultComparer, tc.obj2, paths(tc.fields2), tc.rev2)
			must(t, err)
			if d1 == d2 {
				t.Errorf("got equal digests %x, want different", d1)
			}
		})
	}
}

func TestDigestRevisionStable(t *testing.T) {
	o := map[string]any{"a": 1}
	for _, rev := range []string{"", "v1"} {
		t.Run(rev, func(t *testing.T) {
			d1, err := digestOf(defaultComparer, o, nil, rev)
			must(t, err)
			d2, err := digestOf(defaultComparer, map[string]any{"a": int64(1)}, nil, rev)
			must(t, err)
			if d1 != d2 {
				t.Errorf("got %x and %x for one value and revision, want equal", d1, d2)
			}
		})
	}
}
