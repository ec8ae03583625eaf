package opbus

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// unplainValues are values admission converts (a number of another Go
// type, a json.Number, a typed map or list) or reports (NaN, a channel).
var unplainValues = []any{
	int32(1), uint8(0), float32(1), json.Number("1"), json.Number("0"), math.NaN(), math.Inf(1),
	map[string]string{"a": "x"}, []string{"x"}, make(chan int), struct{}{},
}

// inject returns a copy of v with one value, chosen at random among its
// entries and elements (or v itself), replaced by bad or, if it is a
// number, at times by the same number of another Go type.
func inject(r *rand.Rand, v any, bad any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 && r.IntN(3) != 0 {
			out := make(map[string]any, len(x))
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range x {
					if !yield(k) {
						return
					}
				}
			})
			pick := keys[r.IntN(len(keys))]
			for k, e := range x {
				out[k] = e
			}
			out[pick] = inject(r, x[pick], bad)
			return out
		}
	case []any:
		if len(x) > 0 && r.IntN(3) != 0 {
			out := slices.Clone(x)
			i := r.IntN(len(x))
			out[i] = inject(r, x[i], bad)
			return out
		}
	default:
		// A number, at times, as the same number of another Go type:
		// a value Equal takes for the old one.
		if r.IntN(2) == 0 {
			switch n := v.(type) {
			case int64:
				return int32(n)
			case float64:
				return json.Number(strconv.FormatFloat(n, 'g', -1, 64))
			}
		}
	}
	return bad
}

// TestPrecompare checks the walk Observe makes of an update (rule 5c):
// for random pairs of documents, some with a value admission converts or
// reports put anywhere in the new one, comparers with list keys and
// ignored paths, and random sets of subscribed roots, precompare answers
// exactly when admission takes the new document as it is and compareIn
// answers, and then with compareIn's changes.
func TestPrecompare(t *testing.T) {
	cmps, roots := compareInCases(t)
	r := rand.New(rand.NewPCG(5, 23))
	var answered, unplain, caught int
	for i := range 40000 {
		old, _ := randomValue(r, 0).(map[string]any)
		if old == nil {
			old = map[string]any{"a": randomValue(r, 1), "b": randomValue(r, 1)}
		}
		new, _ := mutateValue(r, old, 0).(map[string]any)
		if new == nil {
			new = map[string]any{}
		}
		if i%2 == 1 {
			bad := unplainValues[r.IntN(len(unplainValues))]
			if m, ok := inject(r, new, bad).(map[string]any); ok {
				new = m
			}
		}
		c := cmps[(i/2)%len(cmps)]
		set, tree := randomRoots(r, roots, 8)
		isPlain := c.m.Plain(new, c.m.All(), 0, "")
		want, wantOK := c.compareIn(old, new, tree)
		got, ok := c.precompare(old, new, tree)
		if !isPlain {
			unplain++
		}
		switch {
		case ok && !isPlain:
			t.Fatalf("pair %d, roots %v: admission converts or reports new, but precompare took it:\nold %v\nnew %#v", i, set, old, new)
		case isPlain && wantOK && !ok:
			t.Fatalf("pair %d, roots %v: precompare declined a plain document that compareIn compares:\nold %v\nnew %v", i, set, old, new)
		case ok && !wantOK:
			t.Fatalf("pair %d, roots %v: compareIn declined, precompare answered %v", i, set, got)
		case ok && !reflect.DeepEqual(got, want):
			t.Fatalf("pair %d, roots %v:\nold %v\nnew %v\nprecompare:\n%v\ncompareIn:\n%v", i, set, old, new, got, want)
		case ok:
			answered++
		case !isPlain:
			caught++
		}
	}
	if answered < 5000 || caught < 5000 {
		t.Fatalf("the pairs exercised too little: %d answered, %d of %d unplain documents declined", answered, caught, unplain)
	}
}

// TestPrecompareKeyedList checks the walk of keyed lists, where equal
// elements are settled by Equal: an element equal to the old one but for
// a number of another Go type is declined, as admission converts it.
func TestPrecompareKeyedList(t *testing.T) {
	c, err := NewComparer(&CompareOptions{ListKeys: map[string]string{"items": "name"}})
	must(t, err)
	tree := &keyTree{}
	tree.Add([]string{"spec"})
	list := func(v any) map[string]any {
		return map[string]any{"spec": map[string]any{"items": []any{
			map[string]any{"name": "p", "size": int64(1)},
			map[string]any{"name": "q", "size": v},
		}}}
	}
	old := list(int64(2))
	for _, v := range []any{int32(2), json.Number("2"), float32(2), uint8(2)} {
		if d, ok := c.precompare(old, list(v), tree); ok {
			t.Fatalf("an element holding %T(2) where the old one holds int64(2): precompare took it, with changes %v", v, d)
		}
	}
	d, ok := c.precompare(old, list(int64(3)), tree)
	if !ok || d.String() != c.Compare(old, list(int64(3))).String() {
		t.Fatalf("a plain change of an element: precompare %v, %v; want the changes of Compare", d, ok)
	}
}

// TestPrecompareUnkeyableList checks a list that its list key cannot key
// (a key repeats, or an element has none), with an element ignored by
// index: the diff walks such a list by index, admission names its
// elements by key where they have one, so what each ignores differs. A
// value admission converts or reports there is declined, and the update
// is admitted as a first state would be.
func TestPrecompareUnkeyableList(t *testing.T) {
	c, err := NewComparer(&CompareOptions{ListKeys: map[string]string{"items": "name"}, Ignore: []string{"spec.items[0].secret"}})
	must(t, err)
	tree := &keyTree{}
	tree.Add([]string{"spec"})
	doc := func(secret any, second map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"items": []any{map[string]any{"name": "a", "secret": secret}, second}}}
	}
	for _, second := range []map[string]any{{"name": "a", "n": "x"}, {"n": "x"}} {
		old := doc("plain", second)
		for _, bad := range []any{make(chan int), int32(7), map[string]string{"k": "v"}} {
			new := doc(bad, second)
			if d, ok := c.precompare(old, new, tree); ok {
				t.Fatalf("second element %v, secret %T: precompare took what admission converts or reports, with changes %v", second, bad, d)
			}
		}
	}

	bus, err := New(&Options{ListKeys: map[string]string{"items": "name"}, Ignore: []string{"spec.items[0].secret"}})
	must(t, err)
	var seen []*Event
	must(t, bus.Handle("h", func(_ context.Context, e *Event) (Status, error) {
		seen = append(seen, e)
		return Status{}, nil
	}, On{Fields: []string{"spec"}}))
	ctx := context.Background()
	key := Key{Kind: "Widget", Namespace: "default", Name: "w"}
	dup := map[string]any{"name": "a", "n": "x"}
	must(t, bus.Dispatch(ctx, key, doc("plain", dup)))
	err = bus.Dispatch(ctx, key, doc(make(chan int), map[string]any{"name": "a", "n": "y"}))
	if err == nil || !strings.Contains(err.Error(), "spec.items[0].secret") {
		t.Fatalf("an update with a channel in spec.items[0].secret: got %v, want the error a first state gets", err)
	}
	must(t, bus.Dispatch(ctx, key, doc(int32(7), map[string]any{"name": "a", "n": "y"})))
	last := seen[len(seen)-1]
	if got := last.New["spec"].(map[string]any)["items"].([]any)[0].(map[string]any)["secret"]; got != int64(7) {
		t.Fatalf("spec.items[0].secret reached the handler as %#v (%T), want int64(7)", got, got)
	}
}

// TestSelfContainingValueIgnored checks a value that contains itself
// where an ignored path puts it out of the door's check: comparing the
// list element that holds it ends (Equal answers false past 1000 levels
// and the walk skips the ignored path) instead of overflowing the stack.
func TestSelfContainingValueIgnored(t *testing.T) {
	loop := map[string]any{}
	loop["a"] = loop
	if Equal(loop, loop) {
		t.Error("Equal of a map that contains itself: true, want false")
	}
	bus, err := New(&Options{ListKeys: map[string]string{"items": "name"}, Ignore: []string{"spec.items[*].loop"}})
	must(t, err)
	runs := 0
	must(t, bus.Handle("h", func(context.Context, *Event) (Status, error) {
		runs++
		return Status{}, nil
	}, On{Fields: []string{"spec"}}))
	doc := func(v string) map[string]any {
		return map[string]any{"spec": map[string]any{"v": v, "items": []any{map[string]any{"name": "a", "loop": loop}}}}
	}
	ctx := context.Background()
	key := Key{Kind: "Widget", Namespace: "default", Name: "w"}
	for _, v := range []string{"1", "2", "2"} {
		must(t, bus.Dispatch(ctx, key, doc(v)))
	}
	if runs != 2 {
		t.Fatalf("the handler ran %d times for spec.v 1, 2, 2; want 2", runs)
	}
}

// TestPrecompareTooDeep checks that the walk that compares an update also
// bounds its nesting as admission does: a value that contains itself,
// put where a shallow one was in a subscribed subtree, is declined.
func TestPrecompareTooDeep(t *testing.T) {
	loop := map[string]any{}
	loop["a"] = loop
	tree := &keyTree{}
	tree.Add([]string{"spec"})
	old := map[string]any{"spec": map[string]any{"a": map[string]any{"a": "x"}}}
	for _, new := range []map[string]any{
		{"spec": map[string]any{"a": loop}},
		{"spec": loop},
		{"spec": map[string]any{"a": map[string]any{"a": "x"}}, "status": loop},
	} {
		if _, ok := defaultComparer.precompare(old, new, tree); ok {
			t.Fatalf("precompare took a value nested deeper than %d levels", maxNesting)
		}
	}
}

// TestObserveUpdateChecked checks, through the bus, what the walk of an
// update must keep from admission: an update that puts a value of
// another Go type into a subscribed field reaches the handler converted,
// one that puts a channel there is refused with its path and queues
// nothing, and a plain update runs the handler with the changes of its
// field.
func TestObserveUpdateChecked(t *testing.T) {
	bus := newBus(t, nil)
	seen := make(chan *Event, 8)
	must(t, bus.Handle("spec", func(_ context.Context, e *Event) (Status, error) {
		seen <- e
		return Status{}, nil
	}, On{Fields: []string{"spec.size", "spec.labels"}}))
	ctx := context.Background()
	key := Key{Kind: "Widget", Namespace: "default", Name: "w"}
	must(t, bus.Dispatch(ctx, key, map[string]any{"spec": map[string]any{"size": int64(1), "labels": map[string]any{"a": "x"}}}))
	<-seen

	must(t, bus.Dispatch(ctx, key, map[string]any{"spec": map[string]any{"size": int32(2), "labels": map[string]any{"a": "x"}}}))
	e := <-seen
	if got := e.New["spec"].(map[string]any)["size"]; got != int64(2) {
		t.Fatalf("spec.size reached the handler as %#v (%T), want int64(2)", got, got)
	}
	if len(e.Changes) != 1 || e.Changes[0].Path.String() != "spec.size" {
		t.Fatalf("changes %v, want one of spec.size", e.Changes)
	}

	must(t, bus.Dispatch(ctx, key, map[string]any{"spec": map[string]any{"size": int64(2), "labels": map[string]string{"a": "y"}}}))
	e = <-seen
	if got := e.New["spec"].(map[string]any)["labels"]; !reflect.DeepEqual(got, map[string]any{"a": "y"}) {
		t.Fatalf("spec.labels reached the handler as %#v, want map[string]any{a: y}", got)
	}

	err := bus.Dispatch(ctx, key, map[string]any{"spec": map[string]any{"size": int64(2), "labels": map[string]any{"a": make(chan int)}}})
	var ve *ValueError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "spec.labels.a") {
		t.Fatalf("an update with a channel in spec.labels.a: got %v, want a *ValueError naming spec.labels.a", err)
	}
	select {
	case e := <-seen:
		t.Fatalf("the refused update ran the handler: %v", e.Changes)
	default:
	}
}
