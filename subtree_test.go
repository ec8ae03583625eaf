package opbus

import (
	"slices"
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
		got, ok := lookup(v, MustParsePath(p))
		if !ok || got != want {
			t.Errorf("Lookup(%s) = %v, %v; want %v", p, got, ok, want)
		}
	}
	for _, p := range []string{"a[2]", "a[name=z]", "m.k.x", "a[*]", "m[0]"} {
		if got, ok := lookup(v, MustParsePath(p)); ok {
			t.Errorf("Lookup(%s) = %v, want not found", p, got)
		}
	}
	var seen []string
	eachMatch(v, MustParsePath("a[*].v"), func(at Path, val any) { seen = append(seen, at.String()) })
	if strings.Join(seen, ",") != "a[0].v,a[1].v" {
		t.Errorf("Resolve(a[*].v) = %v", seen)
	}
}

// TestFieldFormsFire checks that a handler subscribed to a list element,
// addressed by index, by [key=value] or by [*], runs on every change of its
// value and is told of it in ev.Changes, whether the bus compares the list
// by key or by index: the diff may name the element the other way.
func TestFieldFormsFire(t *testing.T) {
	keyed := map[string]string{"containers": "name", "containerStatuses": "name"}
	// containers builds a list with element "side" first and "app" second;
	// app's image and state are v.
	containers := func(v string) map[string]any {
		return map[string]any{
			"spec": map[string]any{"containers": []any{
				map[string]any{"name": "side", "image": "side:1"},
				map[string]any{"name": "app", "image": v},
			}},
			"status": map[string]any{"containerStatuses": []any{
				map[string]any{"name": "side", "state": "running"},
				map[string]any{"name": "app", "state": v},
			}},
		}
	}
	// duplicates has two elements named app; the first one's image is v.
	duplicates := func(v string) map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": v},
			map[string]any{"name": "app", "image": "other"},
		}}}
	}
	// reordered puts the element named v first: a reordering alone, which
	// a keyed diff does not report, changes what [0] addresses.
	reordered := func(v string) map[string]any {
		l := []any{map[string]any{"name": "a", "image": "a"}, map[string]any{"name": "b", "image": "b"}}
		if v == "b" {
			l[0], l[1] = l[1], l[0]
		}
		return map[string]any{"spec": map[string]any{"containers": l}}
	}
	tests := []struct {
		name     string
		listKeys map[string]string
		field    string
		state    func(v string) map[string]any
		values   []string
		wantPath string // where ev.Changes reports the change
	}{
		{"match path, lists by index", nil, "status.containerStatuses[name=app].state", containers,
			[]string{"waiting", "running", "terminated"}, "status.containerStatuses[name=app].state"},
		{"index path, lists by key", keyed, "spec.containers[1].image", containers,
			[]string{"app:1", "app:2", "app:3"}, "spec.containers[1].image"},
		{"wildcard, lists by index", nil, "spec.containers[*].image", containers,
			[]string{"app:1", "app:2", "app:3"}, "spec.containers[1].image"},
		{"wildcard, lists by key", keyed, "spec.containers[*].image", containers,
			[]string{"app:1", "app:2", "app:3"}, "spec.containers[name=app].image"},
		{"match path, duplicate keys", keyed, "spec.containers[name=app].image", duplicates,
			[]string{"app:1", "app:2", "app:3"}, "spec.containers[name=app].image"},
		{"wildcard, duplicate keys", keyed, "spec.containers[*].image", duplicates,
			[]string{"app:1", "app:2", "app:3"}, "spec.containers[0].image"},
		{"index path, keyed list reordered", keyed, "spec.containers[0].image", reordered,
			[]string{"a", "b", "a"}, "spec.containers[0].image"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			b := newBus(t, &Options{ListKeys: tc.listKeys})
			var r recorder
			must(t, b.Handle("h", r.handle, On{Fields: []string{tc.field}}))
			for i, v := range tc.values {
				must(t, b.Dispatch(ctx, podKey, tc.state(v)))
				if got, want := r.count(), i+1; got != want {
					t.Fatalf("after state %d: handler ran %d times, want %d", i+1, got, want)
				}
				ch := r.last().Changes
				want := MustParsePath(tc.wantPath)
				if !slices.ContainsFunc(ch, func(c Change) bool { return c.Path.Equal(want) && c.New == v }) {
					t.Errorf("after state %d: got changes\n%v\nwant one at %s to %q", i+1, ch, tc.wantPath, v)
				}
			}
		})
	}
}

func TestTouchesFieldForms(t *testing.T) {
	keyed, err := NewComparer(&CompareOptions{ListKeys: map[string]string{"containers": "name"}})
	must(t, err)
	tests := []struct {
		name   string
		cmp    *Comparer
		field  string
		change string // the path of the diff's one change
		want   bool
	}{
		{"same keys", defaultComparer, "spec.a", "spec.a", true},
		{"other key", defaultComparer, "spec.a", "spec.b", false},
		{"ancestor", defaultComparer, "spec.a.b", "spec", true},
		{"descendant", defaultComparer, "spec", "spec.a.b", true},
		{"match against index", defaultComparer, "s.l[name=app].x", "s.l[0].x", true},
		{"match field of an element by index", defaultComparer, "s.l[name=app].x", "s.l[0].name", true},
		{"other field of an element by index", defaultComparer, "s.l[name=app].x", "s.l[0].y", false},
		{"match field on another key", keyed, "spec.containers[image=x].ports", "spec.containers[name=web].image", true},
		{"index against match", keyed, "spec.containers[0].image", "spec.containers[name=app].image", true},
		{"other index", defaultComparer, "s.l[0]", "s.l[1]", false},
		{"other match value", keyed, "spec.containers[name=app]", "spec.containers[name=web]", false},
		{"match on another field", keyed, "spec.containers[image=x]", "spec.containers[name=web]", true},
		{"wildcard", keyed, "spec.containers[*].image", "spec.containers[name=web].image", true},
		{"wildcard, other key below", keyed, "spec.containers[*].image", "spec.containers[name=web].env", false},
		{"key against element", defaultComparer, "s.l.x", "s.l[0]", false},
		{"index into a keyed list, no change", keyed, "spec.containers[0].image", "", true},
		{"match on the list key, no change", keyed, "spec.containers[name=app].image", "", false},
		{"index into an unkeyed list, no change", keyed, "spec.volumes[0]", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d Diff
			if tc.change != "" {
				d = Diff{{Op: OpChange, Path: MustParsePath(tc.change), Old: 1, New: 2}}
			}
			if got := touches(tc.cmp, d, []Path{MustParsePath(tc.field)}); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
