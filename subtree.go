package opbus

import (
	"slices"

	"github.com/opbus/opbus/internal/jsonvalue"
)

// Touches reports whether any change of d affects the subtree that the
// pattern p addresses: a change at or below it, or at one of its ancestors.
func (d Diff) Touches(p Path) bool {
	for _, c := range d {
		if p.overlaps(c.Path) {
			return true
		}
	}
	return false
}

// Under re-roots d at p, as kopf's reduce does: the changes at or below the
// subtrees that the pattern p addresses, with p's segments stripped from
// their paths. A change at an ancestor of p is narrowed to what changed
// within p, by comparing the old and new values found there.
func (d Diff) Under(p Path) Diff {
	var out Diff
	for _, c := range d.narrow(defaultComparer, p) {
		c.Path = c.Path[len(p):]
		out = append(out, c)
	}
	return out
}

// narrow returns the changes of d that fall within the subtrees addressed by
// p, keeping absolute paths; a change above p is refined with c.
func (d Diff) narrow(cmp *Comparer, p Path) Diff {
	var out Diff
	for _, c := range d {
		switch {
		case p.covers(c.Path):
			out = append(out, c)
		case p.overlaps(c.Path):
			out = append(out, refine(cmp, c, p)...)
		}
	}
	return out
}

// refine narrows a change at an ancestor of p to the changes within p.
func refine(cmp *Comparer, c Change, p Path) Diff {
	rest := p[len(c.Path):]
	if !rest.isPattern() {
		o, inOld := lookup(c.Old, rest)
		n, inNew := lookup(c.New, rest)
		inOld = inOld && c.Op != OpAdd
		inNew = inNew && c.Op != OpRemove
		full := append(append(Path(nil), c.Path...), rest...)
		switch {
		case inOld && inNew:
			var out Diff
			for _, sub := range cmp.Compare(o, n) {
				sub.Path = append(append(Path(nil), full...), sub.Path...)
				out = append(out, sub)
			}
			return out
		case inOld:
			return Diff{{Op: OpRemove, Path: full, Old: o}}
		case inNew:
			return Diff{{Op: OpAdd, Path: full, New: n}}
		}
		return nil
	}
	var ps pairs
	collect := func(v any, isOld bool) {
		eachMatch(v, rest, func(at Path, val any) {
			ps.add(append(append(Path(nil), c.Path...), at...), val, isOld)
		})
	}
	if c.Op != OpAdd {
		collect(c.Old, true)
	}
	if c.Op != OpRemove {
		collect(c.New, false)
	}
	return ps.diff(cmp)
}

// touches reports whether the changes d may have changed the value at any
// of fields (any value at all when fields is empty). It decides cheaply and
// errs on the side of true: it never reports false when a subscribed value
// changed, though the diff may name a list element by index ([0]) where the
// field names it by key ([name=app]) or the other way round.
func touches(cmp *Comparer, d Diff, fields []Path) bool {
	if len(fields) == 0 {
		return len(d) > 0
	}
	for _, f := range fields {
		if cmp.reorderable(f) {
			return true
		}
		for _, c := range d {
			if mayOverlap(f, c.Path) {
				return true
			}
		}
	}
	return false
}

// mayOverlap reports whether a change at the concrete path c may change
// the value at the field f: c is at, below or above a path f may stand
// for, or changes the field by which f matches a list element
// ([name=app]) in an element f may stand for. Unlike [Path.overlaps], a
// [SegIndex] and a [SegMatch] may address the same element, and so may two
// [SegMatch] segments on different fields.
func mayOverlap(f, c Path) bool {
	n := min(len(f), len(c))
	for i := 0; i < n; i++ {
		if !maySame(f[i], c[i]) {
			return false
		}
		if f[i].Kind == SegMatch && i+1 < len(c) && c[i+1].Kind == SegKey && c[i+1].Key == f[i].Key {
			// The element's match field changed: which element f
			// selects may have, though the diff, naming elements by
			// index, shows no change below it at f's path (two
			// elements swapped, each taking the other's value there).
			return true
		}
	}
	return true
}

// maySame reports whether segments a and b may address the same child. A
// map key is told apart from a list element (a value that turns from map
// to list, or back, is a change at its parent); [*] may be either.
func maySame(a, b Segment) bool {
	if a.Kind == SegAny || b.Kind == SegAny {
		return true // [*] stands for map keys as well as list elements
	}
	if a.Kind == SegKey || b.Kind == SegKey {
		return a.Kind == b.Kind && a.Key == b.Key
	}
	switch {
	case a.Kind == SegIndex && b.Kind == SegIndex:
		return a.Index == b.Index
	case a.Kind == SegMatch && b.Kind == SegMatch && a.Key == b.Key:
		return a.Value == b.Value
	}
	return true // index against key, or keys on different fields
}

// reorderable reports whether the value at f can change with no change in
// a diff of c: f addresses, by position ([0]) or by a field other than
// the list key ([image=x], which finds the first such element), an element
// of a list that c may compare by key, where a reordering is no change.
func (c *Comparer) reorderable(f Path) bool {
	for i, s := range f {
		if (s.Kind == SegIndex || s.Kind == SegMatch) && c.reorders(f[:i], s) {
			return true
		}
	}
	return false
}

// reorders reports whether c may compare a list at a path that the pattern
// p stands for by a key field that does not identify the element s.
func (c *Comparer) reorders(p Path, s Segment) bool {
	other := func(field string) bool { return s.Kind == SegIndex || field != s.Key }
	n := len(p)
	if n > 0 && len(c.anyDepth) > 0 {
		switch last := p[n-1]; last.Kind {
		case SegKey:
			if field, ok := c.anyDepth[last.Key]; ok && other(field) {
				return true
			}
		case SegAny:
			for _, field := range c.anyDepth {
				if other(field) {
					return true
				}
			}
		}
	}
	for _, pt := range c.patterns {
		if !pt.ignore && len(pt.path) == n && mayOverlap(pt.path, p) && other(pt.field) {
			return true
		}
	}
	return false
}

// relevant returns the changes within fields, sorted by path: all of
// changes when fields is empty. changes turn old into new (nil for an
// object that did not exist before, or no longer exists). A field that
// addresses list elements by index, by [field=value] or by [*] is resolved
// in old and new and its values compared, since the diff may name those
// elements another way, or, for a reordered keyed list, not at all; the
// changes are reported under the field's own spelling, [*] standing for
// the diff's name of each element.
func relevant(cmp *Comparer, changes Diff, fields []Path, old, new map[string]any) Diff {
	if len(fields) == 0 {
		return changes
	}
	if len(changes) == 0 && (old == nil || new == nil || !slices.ContainsFunc(fields, cmp.reorderable)) {
		return changes
	}
	if len(fields) == 1 {
		return cmp.within(changes, fields[0], old, new)
	}
	var out Diff
	for _, f := range fields {
		for _, c := range cmp.within(changes, f, old, new) {
			if !slices.ContainsFunc(out, func(o Change) bool { return o.Path.Equal(c.Path) }) {
				out = append(out, c)
			}
		}
	}
	slices.SortStableFunc(out, func(x, y Change) int { return comparePaths(x.Path, y.Path) })
	return out
}

// within returns the changes at the field f that turn old into new; d is
// the diff of old and new.
func (c *Comparer) within(d Diff, f Path, old, new map[string]any) Diff {
	keysOnly := true
	for _, s := range f {
		if s.Kind != SegKey {
			keysOnly = false
			break
		}
	}
	if keysOnly {
		return d.narrow(c, f) // the diff names map keys as f does
	}
	if out, ok := c.covered(d, f); ok {
		return out
	}
	var ps pairs
	unique := map[*any]bool{} // keyed lists without duplicate keys, by first element
	collect := func(root map[string]any, isOld bool) {
		if root == nil {
			return
		}
		eachMatch(root, f, func(at Path, val any) {
			if c.m.Ignores() == 0 || !c.ignored(c.keyed(root, at)) {
				ps.add(c.named(root, f, at, unique), val, isOld)
			}
		})
	}
	collect(old, true)
	collect(new, false)
	return ps.diff(c)
}

// pairs gathers the values found at the same paths of an old and a new
// value, to compare them pair by pair. The zero pairs is empty.
type pairs struct {
	list  []pair
	index map[string]int // by the encoding of at (see appendPath)
}

type pair struct {
	at           Path
	old, new     any
	inOld, inNew bool
}

// add records val, found at at (which the pairs keep) in the old value
// (isOld) or the new one.
func (ps *pairs) add(at Path, val any, isOld bool) {
	k := string(appendPath(nil, at))
	i, ok := ps.index[k]
	if !ok {
		if ps.index == nil {
			ps.index = map[string]int{}
		}
		i = len(ps.list)
		ps.index[k] = i
		ps.list = append(ps.list, pair{at: at})
	}
	if isOld {
		ps.list[i].old, ps.list[i].inOld = val, true
	} else {
		ps.list[i].new, ps.list[i].inNew = val, true
	}
}

// diff returns the changes from the old values to the new ones, in path
// order: the changes cmp finds within a pair, under its path; a value
// found on one side only is removed or added there.
func (ps *pairs) diff(cmp *Comparer) Diff {
	slices.SortFunc(ps.list, func(x, y pair) int { return comparePaths(x.at, y.at) })
	var out Diff
	for _, pr := range ps.list {
		switch {
		case pr.inOld && pr.inNew:
			for _, sub := range cmp.Compare(pr.old, pr.new) {
				sub.Path = append(slices.Clip(pr.at), sub.Path...)
				out = append(out, sub)
			}
		case pr.inOld:
			out = append(out, Change{Op: OpRemove, Path: pr.at, Old: pr.old})
		default:
			out = append(out, Change{Op: OpAdd, Path: pr.at, New: pr.new})
		}
	}
	return out
}

// covered returns the changes of d within f, and true, when d names them as
// f does: every change that may touch f lies at or below a path f stands
// for, segment by segment, and no reordering can change f's value unseen.
// Then they are what resolving f would find, and it is the common case.
func (c *Comparer) covered(d Diff, f Path) (Diff, bool) {
	if c.reorderable(f) {
		return nil, false
	}
	var out Diff
	for _, ch := range d {
		switch {
		case f.covers(ch.Path):
			out = append(out, ch)
		case mayOverlap(f, ch.Path):
			return nil, false
		}
	}
	return out, true
}

// named returns a copy of at, a match of the pattern f in root, as
// [Comparer.within] reports it: what f spells out stays as written, and an
// element that a [SegAny] matches in a keyed list is named by its key, as
// the diff names it, unless the list has duplicate keys. unique caches
// which lists have distinct keys.
func (c *Comparer) named(root any, f, at Path, unique map[*any]bool) Path {
	return c.rekey(root, at, func(i int, l []any, field string) bool {
		if f[i].Kind != SegAny {
			return false
		}
		u, known := unique[&l[0]]
		if !known {
			u = jsonvalue.Keyable(l, field) && !jsonvalue.HasDuplicateKeys(l, field)
			unique[&l[0]] = u
		}
		return u
	})
}
