package opbus

import (
	"cmp"
	"slices"
	"strings"
)

// Lookup returns the value at the concrete path p in v and whether it
// exists. A [SegMatch] segment finds the list element whose field has that
// value; [SegAny] is not concrete and finds nothing (see [Resolve]).
func Lookup(v any, p Path) (any, bool) {
	for _, s := range p {
		var ok bool
		if v, ok = step(v, s); !ok {
			return nil, false
		}
	}
	return v, true
}

func step(v any, s Segment) (any, bool) {
	switch s.Kind {
	case SegKey:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		e, ok := m[s.Key]
		return e, ok
	case SegIndex:
		l, ok := v.([]any)
		if !ok || s.Index >= len(l) {
			return nil, false
		}
		return l[s.Index], true
	case SegMatch:
		l, ok := v.([]any)
		if !ok {
			return nil, false
		}
		for _, e := range l {
			if k, ok := elementKey(e, s.Key); ok && k == s.Value {
				return e, true
			}
		}
	}
	return nil, false
}

// Resolve calls fn for every concrete path in v that the pattern p matches,
// with the value there, in document order (map keys unordered). Matched
// [SegMatch] segments stay in the concrete path as they are; [SegAny] becomes
// an index or a key. The path passed to fn is only valid during the call.
func Resolve(v any, p Path, fn func(at Path, val any)) {
	resolve(v, p, make(Path, 0, len(p)), fn)
}

func resolve(v any, rest, at Path, fn func(Path, any)) {
	if len(rest) == 0 {
		fn(at, v)
		return
	}
	s := rest[0]
	if s.Kind != SegAny {
		if e, ok := step(v, s); ok {
			resolve(e, rest[1:], append(at, s), fn)
		}
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			resolve(e, rest[1:], append(at, MapKey(k)), fn)
		}
	case []any:
		for i, e := range x {
			resolve(e, rest[1:], append(at, ListIndex(i)), fn)
		}
	}
}

// Touches reports whether any change of d affects the subtree that the
// pattern p addresses: a change at or below it, or at one of its ancestors.
func (d Diff) Touches(p Path) bool {
	for _, c := range d {
		if p.Overlaps(c.Path) {
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
		case p.Covers(c.Path):
			out = append(out, c)
		case p.Overlaps(c.Path):
			out = append(out, refine(cmp, c, p)...)
		}
	}
	return out
}

// refine narrows a change at an ancestor of p to the changes within p.
func refine(cmp *Comparer, c Change, p Path) Diff {
	rest := p[len(c.Path):]
	if !rest.IsPattern() {
		o, inOld := Lookup(c.Old, rest)
		n, inNew := Lookup(c.New, rest)
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
	type pair struct {
		old, new     any
		inOld, inNew bool
		full         Path
	}
	var pairs []pair
	index := map[string]int{}
	collect := func(v any, isOld bool) {
		Resolve(v, rest, func(at Path, val any) {
			key := at.String()
			i, ok := index[key]
			if !ok {
				i = len(pairs)
				index[key] = i
				full := append(append(Path(nil), c.Path...), at...)
				pairs = append(pairs, pair{full: full})
			}
			if isOld {
				pairs[i].old, pairs[i].inOld = val, true
			} else {
				pairs[i].new, pairs[i].inNew = val, true
			}
		})
	}
	if c.Op != OpAdd {
		collect(c.Old, true)
	}
	if c.Op != OpRemove {
		collect(c.New, false)
	}
	slices.SortFunc(pairs, func(x, y pair) int { return ComparePaths(x.full, y.full) })
	var out Diff
	for _, pr := range pairs {
		switch {
		case pr.inOld && pr.inNew:
			for _, sub := range cmp.Compare(pr.old, pr.new) {
				sub.Path = append(append(Path(nil), pr.full...), sub.Path...)
				out = append(out, sub)
			}
		case pr.inOld:
			out = append(out, Change{Op: OpRemove, Path: pr.full, Old: pr.old})
		default:
			out = append(out, Change{Op: OpAdd, Path: pr.full, New: pr.new})
		}
	}
	return out
}

// ComparePaths orders paths as diffs are ordered: segment by segment, keys in
// byte order, indexes by number, keyed elements by value; a path sorts
// before the paths below it.
func ComparePaths(a, b Path) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x.Kind != y.Kind {
			return cmp.Compare(x.Kind, y.Kind)
		}
		var r int
		switch x.Kind {
		case SegIndex:
			r = cmp.Compare(x.Index, y.Index)
		case SegMatch:
			if r = strings.Compare(x.Key, y.Key); r == 0 {
				r = strings.Compare(x.Value, y.Value)
			}
		default:
			r = strings.Compare(x.Key, y.Key)
		}
		if r != 0 {
			return r
		}
	}
	return cmp.Compare(len(a), len(b))
}
