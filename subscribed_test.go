package opbus

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// randomValue makes a small JSON-like value over few keys, so that two
// values made independently share paths and differ in places.
func randomValue(r *rand.Rand, depth int) any {
	n := r.IntN(10)
	if depth > 3 {
		n = r.IntN(4)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return "x"
	case 2:
		return float64(r.IntN(2))
	case 3:
		return int64(r.IntN(2))
	case 4, 5, 6:
		m := map[string]any{}
		for _, k := range []string{"a", "b", "c", "name"} {
			if r.IntN(2) == 0 {
				m[k] = randomValue(r, depth+1)
			}
		}
		return m
	default:
		var l []any
		for i := range r.IntN(3) {
			e := map[string]any{"name": []string{"p", "q", "r"}[(i+r.IntN(2))%3]}
			if r.IntN(2) == 0 {
				e["a"] = randomValue(r, depth+1)
			}
			l = append(l, e)
		}
		return l
	}
}

// mutateValue returns a copy of v with a few random changes.
func mutateValue(r *rand.Rand, v any, depth int) any {
	if r.IntN(8) == 0 {
		return randomValue(r, depth)
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if r.IntN(10) == 0 {
				continue
			}
			out[k] = mutateValue(r, e, depth+1)
		}
		if r.IntN(6) == 0 {
			out[[]string{"a", "b", "c"}[r.IntN(3)]] = randomValue(r, depth+1)
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			out = append(out, mutateValue(r, e, depth+1))
		}
		if len(out) > 1 && r.IntN(4) == 0 {
			out[0], out[1] = out[1], out[0]
		}
		return out
	}
	return v
}

// shapeDiffers reports whether some strict ancestor of root is present in
// one of old and new only, or is a map in one and not in the other: then
// compareIn may decline even where ignored content makes the full diff
// report nothing.
func shapeDiffers(old, new map[string]any, root Path) bool {
	var a, b any = old, new
	for _, s := range root[:len(root)-1] {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok != bok {
			return true
		}
		if !aok {
			return false
		}
		var inA, inB bool
		a, inA = am[s.Key]
		b, inB = bm[s.Key]
		if inA != inB {
			return true
		}
	}
	return false
}

// compareInCases returns the comparers (list keys and ignored paths over
// randomValue's keys) and the candidate roots (every path of one to three
// of those keys) that the subtree walks are checked with.
func compareInCases(t *testing.T) ([]*Comparer, []Path) {
	cmps := []*Comparer{defaultComparer}
	for _, opts := range []*CompareOptions{
		{ListKeys: map[string]string{"a": "name"}},
		{Ignore: []string{"a.b", "c.a"}, ListKeys: map[string]string{"b.c": "name"}},
		{Ignore: []string{"b"}},
		// Ignored elements, by index and by key, of lists that can be
		// keyed or not (randomValue's names repeat).
		{Ignore: []string{"a[0].a", "b.a[name=p].a", "c[*].name"}, ListKeys: map[string]string{"a": "name"}},
	} {
		c, err := NewComparer(opts)
		must(t, err)
		cmps = append(cmps, c)
	}
	var roots []Path
	keys := []string{"a", "b", "c", "name"}
	for _, x := range keys {
		roots = append(roots, Path{MapKey(x)})
		for _, y := range keys {
			roots = append(roots, Path{MapKey(x), MapKey(y)})
			for _, z := range keys {
				roots = append(roots, Path{MapKey(x), MapKey(y), MapKey(z)})
			}
		}
	}
	return cmps, roots
}

// randomRoots picks a set of subscribed roots among roots, none at or
// below another, in path order, and their tree: one at random, and, unless
// oneIn is 0, each other with a chance of one in oneIn.
func randomRoots(r *rand.Rand, roots []Path, oneIn int) ([]Path, *keyTree) {
	set := []Path{roots[r.IntN(len(roots))]}
	if oneIn > 0 {
		for _, root := range roots {
			if r.IntN(oneIn) == 0 && !slices.ContainsFunc(set, func(p Path) bool { return isPrefix(p, root) || isPrefix(root, p) }) {
				set = append(set, root)
			}
		}
	}
	slices.SortFunc(set, comparePaths)
	tree := &keyTree{}
	for _, root := range set {
		keys := make([]string, len(root))
		for i, s := range root {
			keys[i] = s.Key
		}
		tree.Add(keys)
	}
	return set, tree
}

// isPrefix reports whether the concrete path p is r or one of its
// ancestors.
func isPrefix(p, r Path) bool {
	return len(p) <= len(r) && slices.Equal(p, r[:len(p)])
}

// TestCompareIn checks the subtree compare that a pass uses when no
// handler reads the whole object (rule 5b): for random pairs of
// documents, comparers with list keys and ignored paths, and random sets
// of roots of up to three keys (one root, or several, none at or below
// another), compareIn returns exactly the changes of the full Compare at
// or below the roots, in the same order, and declines only when the full
// diff holds a change above a root or an ancestor of a root differs in
// shape (whose content may all be ignored), where the pass falls back to
// the full diff.
func TestCompareIn(t *testing.T) {
	cmps, roots := compareInCases(t)
	r := rand.New(rand.NewPCG(1, 17))
	declined, compared := 0, 0
	for i := range 20000 {
		old, _ := randomValue(r, 0).(map[string]any)
		if old == nil {
			old = map[string]any{"a": randomValue(r, 1), "b": randomValue(r, 1)}
		}
		new, _ := mutateValue(r, old, 0).(map[string]any)
		if new == nil {
			new = map[string]any{}
		}
		c := cmps[i%len(cmps)]
		oneIn := 0
		if i%2 == 1 {
			oneIn = 6
		}
		set, tree := randomRoots(r, roots, oneIn)
		full := c.Compare(old, new)
		var want Diff
		above, shape := false, false
		for _, ch := range full {
			for _, root := range set {
				switch {
				case root.covers(ch.Path):
					want = append(want, ch)
				case len(ch.Path) < len(root) && isPrefix(ch.Path, root):
					above = true
				}
			}
		}
		for _, root := range set {
			shape = shape || shapeDiffers(old, new, root)
		}
		got, ok := c.compareIn(old, new, tree)
		if !ok {
			declined++
			if !above && !shape {
				t.Fatalf("pair %d, roots %v: declined, but the full diff has no change above them:\nold %v\nnew %v\nfull:\n%v", i, set, old, new, full)
			}
			continue
		}
		compared++
		if above {
			t.Fatalf("pair %d, roots %v: the full diff changes an ancestor, but compareIn answered %v", i, set, got)
		}
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("pair %d, roots %v:\nold %v\nnew %v\ncompareIn:\n%v\nfull diff under the roots:\n%v", i, set, old, new, got, want)
		}
	}
	if declined == 0 || compared < 1000 {
		t.Fatalf("the pairs exercised too little: %d declined, %d compared", declined, compared)
	}
}

// TestSubscribedDispatch checks that a pass whose handlers all subscribe
// to fields gives each handler the Changes the full diff gives it, and runs
// exactly the handlers whose fields changed, while a change only outside
// every subscribed subtree runs none (rule 5b).
func TestSubscribedDispatch(t *testing.T) {
	ctx := context.Background()
	b := newBus(t, &Options{ListKeys: map[string]string{"containers": "name"}})
	type call struct {
		handler string
		changes string
	}
	var calls []call
	fields := map[string][]string{
		"image":  {"spec.containers[name=app].image"},
		"labels": {"metadata.labels"},
		"phase":  {"status.phase", "status.podIP"},
		"ready":  {"status.conditions[*].status"},
	}
	for _, id := range []string{"image", "labels", "phase", "ready"} {
		must(t, b.Handle(id, func(_ context.Context, ev *Event) (Status, error) {
			if ev.Type == Update {
				calls = append(calls, call{ev.Handler, ev.Changes.String()})
			}
			return Status{}, nil
		}, On{Fields: fields[id]}))
	}
	obj := func(image, label, phase, ready, noise string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": label}, "resourceVersion": noise},
			"spec": map[string]any{"containers": []any{
				map[string]any{"name": "side", "image": "s:1"},
				map[string]any{"name": "app", "image": image},
			}},
			"status": map[string]any{"phase": phase, "conditions": []any{map[string]any{"type": "Ready", "status": ready}}},
		}
	}
	key := Key{Kind: "Pod", Namespace: "ns", Name: "web"}
	must(t, b.Dispatch(ctx, key, obj("a:1", "web", "Running", "True", "1")))
	steps := []struct {
		obj  map[string]any
		want []call
	}{
		{obj("a:1", "web", "Running", "True", "2"), nil},
		{obj("a:2", "web", "Running", "True", "3"), []call{{"image", `change spec.containers[name=app].image: "a:1" → "a:2"`}}},
		{obj("a:2", "canary", "Failed", "False", "4"), []call{
			{"labels", `change metadata.labels.app: "web" → "canary"`},
			{"phase", `change status.phase: "Running" → "Failed"`},
			{"ready", `change status.conditions[0].status: "True" → "False"`},
		}},
	}
	for i, s := range steps {
		calls = nil
		must(t, b.Dispatch(ctx, key, s.obj))
		if fmt.Sprint(calls) != fmt.Sprint(s.want) {
			t.Errorf("update %d: handlers ran with\n%v\nwant\n%v", i, calls, s.want)
		}
	}
	s := b.subscribedOf("Pod")
	if got, want := fmt.Sprint(s.whole, s.roots), "false [[metadata labels] [spec containers] [status conditions] [status phase] [status podIP]]"; got != want {
		t.Errorf("subscribed roots of Pod: %s, want %s", got, want)
	}
}

// TestSubscribedWhole checks that a handler without fields makes the pass
// compare the whole object.
func TestSubscribedWhole(t *testing.T) {
	b := newBus(t, nil)
	must(t, b.Handle("all", func(context.Context, *Event) (Status, error) { return Status{}, nil }, On{}))
	must(t, b.Handle("some", func(context.Context, *Event) (Status, error) { return Status{}, nil }, On{Fields: []string{"spec"}}))
	if s := b.subscribedOf("Pod"); !s.whole {
		t.Errorf("subscribed of a kind with a whole-object handler: %+v, want whole", s)
	}
}

// A handler of status.containerStatuses[name=app].state on an unkeyed list
// runs when two elements swap places and the app's state changes with it,
// though the diff, by index, shows only the names moving: the app (at
// [1], waiting) and the side car (at [0], running) swap, and the app is
// now running. Found by TestSimulation, seed 277919526, with coalescing.
func TestMatchFieldOfSwappedElements(t *testing.T) {
	b := newBus(t, nil)
	var r recorder
	must(t, b.Handle("app", r.handle, On{Fields: []string{"status.containerStatuses[name=app].state"}}))
	ctx := context.Background()
	statuses := func(pairs ...string) map[string]any {
		var l []any
		for i := 0; i < len(pairs); i += 2 {
			l = append(l, map[string]any{"name": pairs[i], "state": pairs[i+1]})
		}
		return map[string]any{"status": map[string]any{"containerStatuses": l}}
	}
	steps := []struct {
		obj  map[string]any
		runs int
	}{
		{statuses("app", "waiting", "side", "waiting"), 1},
		{statuses("side", "running", "app", "waiting"), 1}, // the app's state is unchanged
		{statuses("app", "running", "side", "waiting"), 2},
	}
	for i, s := range steps {
		must(t, b.Dispatch(ctx, podKey, s.obj))
		if got := r.count(); got != s.runs {
			t.Fatalf("step %d: the handler ran %d times, want %d", i+1, got, s.runs)
		}
	}
	if ev := r.last(); len(ev.Changes) != 1 || ev.Changes[0].New != "running" {
		t.Errorf("the last run's changes = %v, want the app's state turning running", ev.Changes)
	}
}
