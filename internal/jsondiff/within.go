package jsondiff

import (
	"slices"

	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// KeyTree is a set of concrete paths of map keys, none at or below
// another: the keys of a level in byte order, each with the tree below it,
// nil where a path ends (the whole subtree is in the set). The zero
// KeyTree is empty.
type KeyTree struct {
	keys []string
	kids []*KeyTree
}

// Add puts the path of map keys p, which no path of t covers or is covered
// by, in t.
func (t *KeyTree) Add(p []string) {
	for len(p) > 1 {
		i, found := slices.BinarySearch(t.keys, p[0])
		if !found {
			t.keys = slices.Insert(t.keys, i, p[0])
			t.kids = slices.Insert(t.kids, i, &KeyTree{})
		}
		t, p = t.kids[i], p[1:]
	}
	i, _ := slices.BinarySearch(t.keys, p[0])
	t.keys = slices.Insert(t.keys, i, p[0])
	t.kids = slices.Insert(t.kids, i, (*KeyTree)(nil))
}

// Roots returns the paths of map keys ps less those at or below another
// of them, sorted key by key in byte order, and the KeyTree that holds
// them; ps is not modified.
func Roots(ps [][]string) ([][]string, *KeyTree) {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, slices.Compare)
	var roots [][]string
	t := &KeyTree{}
	for _, p := range ps {
		// Sorted, the paths below a root follow it.
		if k := len(roots); k > 0 && len(roots[k-1]) <= len(p) && slices.Equal(roots[k-1], p[:len(roots[k-1])]) {
			continue
		}
		roots = append(roots, p)
		t.Add(p)
	}
	return roots, t
}

// CompareIn returns the changes of Compare(c, old, new) at or below the
// paths of t, in path order, walking only those subtrees, each with the
// pattern state the full walk has there. It reports false, having found
// nothing, when the full diff may hold a change above one of them: an
// ancestor present on one side only, or not a map on one side while the
// values differ.
func (w *Walker[C]) CompareIn(c *Patterns, old, new map[string]any, t *KeyTree) ([]C, bool) {
	w.c = c
	ok := w.within(old, new, t, c.all)
	out := w.done()
	if !ok {
		return nil, false
	}
	return out, true
}

// Precompare is CompareIn that also checks new as admission does
// ([Patterns.Plain] from the root): the subtrees of t as the diff walks
// them, the rest of new by plainOutside. It reports false when new is not
// plain, or CompareIn declines (then the parts of new it did not reach
// are unchecked). A third mode of the walk, it saves the admission walk
// of a state whose diff is needed anyway.
func (w *Walker[C]) Precompare(c *Patterns, old, new map[string]any, t *KeyTree) ([]C, bool) {
	if !c.plainOutside(new, t, c.all, 0) {
		return nil, false
	}
	w.c, w.check = c, true
	ok := w.within(old, new, t, c.all) && !w.bad
	out := w.done()
	if !ok {
		return nil, false
	}
	return out, true
}

// within walks the keys of t in a and b, the maps at w.path with pattern
// state mask, as the full walk would.
func (w *Walker[C]) within(a, b map[string]any, t *KeyTree, mask uint64) bool {
	depth := len(w.path)
	for i, k := range t.keys {
		seg := Segment{Kind: pathsyntax.Key, Key: k}
		next, ignored, field := w.c.Step(mask, depth, seg)
		if ignored {
			continue // the full walk skips the subtree
		}
		av, inA := a[k]
		bv, inB := b[k]
		if !inA && !inB {
			continue
		}
		w.path = append(w.path, seg)
		ok := w.withinKey(av, bv, inA, inB, t.kids[i], next, field)
		w.path = w.path[:depth]
		if !ok {
			return false
		}
	}
	return true
}

// withinKey is within for one key of t, at the end of w.path, whose values
// are av (if inA) and bv (if inB), with the tree sub below it.
func (w *Walker[C]) withinKey(av, bv any, inA, inB bool, sub *KeyTree, next uint64, field string) bool {
	switch {
	case inA != inB && sub != nil:
		return false // a change above a subscribed path
	case inA != inB && inA:
		w.emit(Remove, av, nil, next, field)
	case inA != inB:
		w.emit(Add, nil, bv, next, field)
	case sub == nil:
		if !jsonvalue.SameScalar(av, bv) {
			w.diffKeyed(av, bv, next, field)
		}
	default:
		am, aok := av.(map[string]any)
		bm, bok := bv.(map[string]any)
		if aok && bok {
			return w.within(am, bm, sub, next)
		}
		return sameLevel(av, bv)
	}
	return true
}

// sameLevel reports whether the full walk, meeting a and b where a
// subscribed path goes on below and one of them is no map, reports nothing
// at or above it: they are equal, or two lists (whose changes are at
// elements, which no key names).
func sameLevel(a, b any) bool {
	_, al := a.([]any)
	_, bl := b.([]any)
	return (al && bl) || jsonvalue.Equal(a, b)
}

// plainOutside is c.Plain for the parts of the map m, at depth with
// pattern state mask, that lie outside the paths of t: a value at a path
// of t is left to the walk that compares it, a map on the way to one is
// walked with the tree below, and whatever else is on the way (a list
// where t goes on below) is checked whole.
func (c *Patterns) plainOutside(m map[string]any, t *KeyTree, mask uint64, depth int) bool {
	for k, e := range m {
		var sub *KeyTree
		i, inTree := slices.BinarySearch(t.keys, k)
		if inTree {
			if sub = t.kids[i]; sub == nil {
				continue // compared, and checked, by within
			}
		}
		var next uint64
		var field string
		if mask&c.ignores != 0 {
			// Else no ignore pattern is alive here or below: c.Plain
			// needs no state.
			var ignored bool
			if next, ignored, field = c.Step(mask, depth, Segment{Kind: pathsyntax.Key, Key: k}); ignored {
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
		if !c.Plain(e, next, depth+1, field) {
			return false
		}
	}
	return true
}
