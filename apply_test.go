package opbus

import (
	"strings"
	"testing"
)

func TestApply(t *testing.T) {
	pairs := [][2]string{
		{`{"a":1,"b":{"c":[1,2,3]}}`, `{"a":2,"b":{"c":[1,9]},"d":null}`},
		{`[1,2]`, `[1,2,3,{"x":1}]`},
		{`{"a":{"b":1}}`, `{"a":"scalar"}`},
		{`{"a":[{"b":[1,2]},3]}`, `{"a":[{"b":[2]}]}`},
		{`1`, `{"x":1}`},
		{`{"a":[1,2,3]}`, `{"a":[]}`},
	}
	for _, p := range pairs {
		a, b := obj(t, p[0]), obj(t, p[1])
		before := jsonText(a)
		got, err := apply(a, Compare(a, b))
		if err != nil {
			t.Fatalf("Apply(%s, Compare(.., %s)): %v", p[0], p[1], err)
		}
		if !Equal(got, b) {
			t.Errorf("Apply(%s, Compare(.., %s)) = %s", p[0], p[1], jsonText(got))
		}
		if jsonText(a) != before {
			t.Errorf("Apply changed its input: %s", jsonText(a))
		}
	}
}

func TestApplyKeyedList(t *testing.T) {
	c, _ := NewComparer(&CompareOptions{ListKeys: map[string]string{"l": "n"}})
	a := obj(t, `{"l":[{"n":"a","v":1},{"n":"b","v":1},{"n":"c"}]}`)
	b := obj(t, `{"l":[{"n":"b","v":2},{"n":"a","v":1},{"n":"d"}]}`)
	got, err := apply(a, c.Compare(a, b))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Compare(got, b); len(d) != 0 {
		t.Errorf("keyed apply left differences: %v (got %s)", d, jsonText(got))
	}
}

func TestApplyErrors(t *testing.T) {
	a := obj(t, `{"a":[1],"m":{}}`)
	for _, c := range []Change{
		{Op: OpChange, Path: MustParsePath("x.y"), New: 1},
		{Op: OpRemove, Path: MustParsePath("m.z")},
		{Op: OpChange, Path: MustParsePath("a[5]"), New: 1},
		{Op: OpAdd, Path: MustParsePath("a[7]"), New: 1},
		{Op: OpChange, Path: MustParsePath("a.b"), New: 1},
		{Op: OpChange, Path: MustParsePath("m[0]"), New: 1},
		{Op: OpChange, Path: MustParsePath("a[*]"), New: 1},
	} {
		_, err := apply(a, Diff{c})
		if err == nil || !strings.Contains(err.Error(), c.Path.String()) {
			t.Errorf("Apply(%v): got %v, want an error naming the path", c, err)
		}
	}
}
