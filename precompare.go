package opbus

import (
	"reflect"
	"slices"

	"github.com/opbus/opbus/internal/jsonvalue"
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
// (c.plain, as admitDocument checks it), for base that is: the subtrees
// of t are checked as the diff walks them, the rest of new by
// plainOutside. It reports false when new is not plain, or compareIn
// declines (then the parts of new it did not reach are unchecked).
func (c *Comparer) precompare(base, new map[string]any, t *keyTree) (Diff, bool) {
	if !c.plainOutside(new, t, c.all, 0) {
		return nil, false
	}
	return c.walkWithin(base, new, t, true)
}

// plainOutside is c.plain for the parts of the map m, at depth with
// pattern state mask, that lie outside the subscribed paths of t: a value
// at a path of t is left to the walk that compares it, a map on the way
// to one is walked with the tree below, and whatever else is on the way
// (a list where t goes on below) is checked whole.
func (c *Comparer) plainOutside(m map[string]any, t *keyTree, mask uint64, depth int) bool {
	for k, e := range m {
		var sub *keyTree
		i, inTree := slices.BinarySearch(t.keys, k)
		if inTree {
			if sub = t.kids[i]; sub == nil {
				continue // compared, and checked, by within
			}
		}
		var next uint64
		var field string
		if mask&c.ignores != 0 {
			// Else no ignore pattern is alive here or below: c.plain
			// needs no state.
			var ignored bool
			if next, ignored, field = c.step(mask, depth, MapKey(k)); ignored {
				continue
			}
		}
		if em, ok := e.(map[string]any); ok && sub != nil {
			if !c.plainOutside(em, sub, next, depth+1) {
				return false
			}
			continue
		}
		if _, ok := e.(string); ok {
			continue
		}
		if !c.plain(e, next, depth+1, field) {
			return false
		}
	}
	return true
}

// equal is Equal for the walker: in a checking walk (precompare) it also
// requires b to hold only what plain accepts.
func (w *walker) equal(a, b any) bool { return jsonvalue.EqualAt(a, b, w.check, len(w.path)) }

// sameMap reports whether a and b are the same map, not only equal ones.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
