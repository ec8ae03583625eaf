package opbus

import (
	"strings"
	"testing"
)

func TestDiffUnderAndTouches(t *testing.T) {
	c, err := NewComparer(&CompareOptions{ListKeys: map[string]string{"containerStatuses": "name"}})
	if err != nil {
		t.Fatal(err)
	}
	old := obj(t, `{"metadata":{"labels":{"a":"1"}},"status":{"phase":"Running","containerStatuses":[
		{"name":"app","ready":true,"state":{"running":{"startedAt":"t0"}}},{"name":"side","ready":true}]}}`)
	new := obj(t, `{"metadata":{"labels":{"a":"1"}},"status":{"phase":"Running","containerStatuses":[
		{"name":"app","ready":false,"state":{"terminated":{"exitCode":1,"reason":"Error"}}},{"name":"side","ready":true}]}}`)
	d := c.Compare(old, new)

	got := diffText(d.Under(MustParsePath("status.containerStatuses")))
	want := strings.Join([]string{
		`change [name=app].ready: true → false`,
		`remove [name=app].state.running (was {"startedAt":"t0"})`,
		`add [name=app].state.terminated = {"exitCode":1,"reason":"Error"}`,
	}, "\n")
	if got != want {
		t.Errorf("Under(status.containerStatuses):\n%s\nwant\n%s", got, want)
	}
	if got := diffText(d.Under(MustParsePath("status.containerStatuses[name=app].state.terminated"))); got != `add (root) = {"exitCode":1,"reason":"Error"}` {
		t.Errorf("Under(...terminated) = %s", got)
	}
	if got := d.Under(MustParsePath("status.containerStatuses[name=side]")); len(got) != 0 {
		t.Errorf("Under(side) = %v, want nothing", got)
	}
	for p, want := range map[string]bool{
		"status": true, "status.containerStatuses[*].ready": true, "status.containerStatuses[name=app].state": true,
		"status.phase": false, "metadata": false, "status.containerStatuses[name=side]": false,
	} {
		if got := d.Touches(MustParsePath(p)); got != want {
			t.Errorf("Touches(%s) = %v, want %v", p, got, want)
		}
	}
}

// TestUnderAncestorChange checks that a change above the subtree (here the
// whole status replaced) is narrowed to what changed inside it.
func TestUnderAncestorChange(t *testing.T) {
	d := Diff{{Op: OpChange, Path: MustParsePath("status"),
		Old: obj(t, `{"phase":"Running","conditions":[{"type":"Ready","status":"True"},{"type":"X","status":"True"}]}`),
		New: obj(t, `{"phase":"Running","conditions":[{"type":"Ready","status":"False"},{"type":"X","status":"True"}]}`)}}
	if got := diffText(d.Under(MustParsePath("status.phase"))); got != "" {
		t.Errorf("Under(status.phase) = %q, want nothing: phase did not change", got)
	}
	if got := diffText(d.Under(MustParsePath("status.conditions[type=Ready]"))); got != `change status: "True" → "False"` {
		t.Errorf("Under(conditions[type=Ready]) = %q", got)
	}
	if got := diffText(d.Under(MustParsePath("status.conditions[*].status"))); got != `change (root): "True" → "False"` {
		t.Errorf("Under(conditions[*].status) = %q", got)
	}
	added := Diff{{Op: OpAdd, Path: MustParsePath("status"), New: obj(t, `{"phase":"Pending"}`)}}
	if got := diffText(added.Under(MustParsePath("status.phase"))); got != `add (root) = "Pending"` {
		t.Errorf("Under of an ancestor add = %q", got)
	}
	if !added.Touches(MustParsePath("status.phase")) {
		t.Error("an ancestor change touches the subtree")
	}
}

func TestLookupAndResolve(t *testing.T) {
	v := obj(t, `{"a":[{"name":"x","v":1},{"name":"y","v":2}],"m":{"k":true}}`)
	for p, want := range map[string]any{"a[1].v": 2.0, "a[name=x].v": 1.0, "m.k": true} {
		got, ok := Lookup(v, MustParsePath(p))
		if !ok || got != want {
			t.Errorf("Lookup(%s) = %v, %v; want %v", p, got, ok, want)
		}
	}
	for _, p := range []string{"a[2]", "a[name=z]", "m.k.x", "a[*]", "m[0]"} {
		if got, ok := Lookup(v, MustParsePath(p)); ok {
			t.Errorf("Lookup(%s) = %v, want not found", p, got)
		}
	}
	var seen []string
	Resolve(v, MustParsePath("a[*].v"), func(at Path, val any) { seen = append(seen, at.String()) })
	if strings.Join(seen, ",") != "a[0].v,a[1].v" {
		t.Errorf("Resolve(a[*].v) = %v", seen)
	}
}
