package opbus

import (
	"reflect"

	"github.com/opbus/opbus/internal/jsondiff"
)

// A preDiff is what Observe found comparing a state with the one observed
// before it, base: the changes within the subscribed subtrees (as
// dispatch.subscribed computes them), found by the walk that checks the
// state at the door. A pass whose state before is base, under the same
// Comparer, takes them instead of walking both states again.
type preDiff struct {
	base map[string]any
	cmp  *Comparer
	diff Diff
}

// precompare admits new, the state of key after base, in one walk with
// the diff of the subscribed subtrees. It returns nil, having admitted
// nothing, when some handler reads the whole object, or when
// Comparer.precompare declines. The admission walk and the comparison
// each cost about a walk of a Pod (bench BenchmarkDispatch); together
// they cost one.
func (b *Bus) precompare(kind string, cmp *Comparer, base, new map[string]any) *preDiff {
	s := b.subscribedOf(kind)
	if s.whole {
		return nil
	}
	diff, ok := cmp.precompare(base, new, s.tree)
	if !ok {
		return nil
	}
	return &preDiff{base: base, cmp: cmp, diff: diff}
}

// precompare returns c.compareIn(base, new, t) and whether new is plain
// (as admitDocument checks it), in one walk: see
// [jsondiff.Walker.Precompare].
func (c *Comparer) precompare(base, new map[string]any, t *keyTree) (Diff, bool) {
	w := walkers.Get().(*jsondiff.Walker[Change])
	out, ok := w.Precompare(&c.m, base, new, t)
	walkers.Put(w)
	return out, ok
}

// sameMap reports whether a and b are the same map, not only equal ones.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
