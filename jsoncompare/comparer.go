package jsoncompare

import (
	"maps"
	"math/bits"
	"slices"
	"strings"

	"github.com/opbus/opbus"
)

// Comparer compares JSON texts with fixed settings, those of an
// [opbus.Comparer] with the same [opbus.CompareOptions]. Build it once
// with [NewComparer]; it is safe for concurrent use.
type Comparer struct {
	cmp      *opbus.Comparer   // the same settings, for the values that differ
	patterns []pattern         // the anchored ignored and list-key paths
	anyDepth map[string]string // list keys by the key holding the list
	all      uint64            // mask with a bit for every pattern
	ignores  uint64            // mask with a bit for every ignore pattern
}

// pattern is an anchored path of the options: ignored, or naming the key
// field of the lists it addresses.
type pattern struct {
	path   opbus.Path
	ignore bool
	field  string
}

var defaultComparer = &Comparer{cmp: &opbus.Comparer{}}

// NewComparer validates the options as [opbus.NewComparer] does, with the
// same errors, and returns a Comparer. Nil options mean the zero
// CompareOptions.
func NewComparer(opts *opbus.CompareOptions) (*Comparer, error) {
	cmp, err := opbus.NewComparer(opts)
	if err != nil {
		return nil, err
	}
	c := &Comparer{cmp: cmp}
	if opts == nil {
		return c, nil
	}
	// The options are valid: opbus.NewComparer checked them.
	for _, s := range opts.Ignore {
		c.patterns = append(c.patterns, pattern{path: opbus.MustParsePath(s), ignore: true})
	}
	for _, s := range slices.Sorted(maps.Keys(opts.ListKeys)) {
		p := opbus.MustParsePath(s)
		if len(p) == 1 && p[0].Kind == opbus.SegKey {
			if c.anyDepth == nil {
				c.anyDepth = map[string]string{}
			}
			c.anyDepth[p[0].Key] = opts.ListKeys[s]
			continue
		}
		c.patterns = append(c.patterns, pattern{path: p, field: opts.ListKeys[s]})
	}
	if n := len(c.patterns); n == 64 {
		c.all = ^uint64(0)
	} else {
		c.all = 1<<n - 1
	}
	for i, p := range c.patterns {
		if p.ignore {
			c.ignores |= 1 << i
		}
	}
	return c, nil
}

// step moves the pattern mask from a node at depth to its child at
// segment s, and reports whether the child is ignored or holds a keyed
// list, as opbus's Comparer does.
func (c *Comparer) step(mask uint64, depth int, s opbus.Segment) (next uint64, ignored bool, field string) {
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		pt := &c.patterns[i]
		if !matches(pt.path[depth], s) {
			continue
		}
		if len(pt.path) == depth+1 {
			if pt.ignore {
				return 0, true, ""
			}
			field = pt.field
			continue
		}
		next |= 1 << i
	}
	if field == "" && c.anyDepth != nil && s.Kind == opbus.SegKey {
		field = c.anyDepth[s.Key]
	}
	return next, false, field
}

// matches reports whether the pattern segment p matches s, a map key or a
// list index: the walk of the texts steps through nothing else (a keyed
// list is compared decoded, by the opbus Comparer), so a match pattern
// ([field=value]) matches nothing here.
func matches(p, s opbus.Segment) bool {
	switch p.Kind {
	case opbus.SegAny:
		return true
	case opbus.SegKey:
		return s.Kind == opbus.SegKey && s.Key == p.Key
	case opbus.SegIndex:
		return s.Kind == opbus.SegIndex && s.Index == p.Index
	}
	return false
}

// values reports the decoded values a and b at the current path, which
// differ in their bytes (inA, inB: whether each side has one): mask is the
// pattern state there, listKey the key field of a keyed list there. Two
// keyed lists, and a container that an ignore pattern may reach into, are
// compared by the opbus Comparer, as its walk would compare them there;
// the rest is a change, an add or a remove, unless two scalars are equal
// (1 and 1.0, "a" and "\u0061").
func (w *walker) values(a, b any, inA, inB bool, mask uint64, listKey string) {
	_, aList := a.([]any)
	_, bList := b.([]any)
	if (listKey != "" && aList && bList) || (mask&w.c.ignores != 0 && (container(a) || container(b))) {
		w.compareHere(a, b, inA, inB)
		return
	}
	p := slices.Clone(w.path)
	switch {
	case !inA:
		w.out = append(w.out, opbus.Change{Op: opbus.OpAdd, Path: p, New: b})
	case !inB:
		w.out = append(w.out, opbus.Change{Op: opbus.OpRemove, Path: p, Old: a})
	case !container(a) && !container(b) && opbus.Equal(a, b):
	default:
		w.out = append(w.out, opbus.Change{Op: opbus.OpChange, Path: p, Old: a, New: b})
	}
}

func container(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// compareHere appends the changes that opbus's Comparer finds between a
// and b at the current path: each is put in a skeleton of the path (maps
// of one key, lists whose earlier elements are null on both sides), so
// that its patterns apply as at the path itself.
func (w *walker) compareHere(a, b any, inA, inB bool) {
	w.out = append(w.out, w.c.cmp.Compare(skeleton(w.path, a, inA), skeleton(w.path, b, inB))...)
}

// skeleton returns v placed at path p in containers that hold nothing
// else; without present, the container that would hold v, empty.
func skeleton(p opbus.Path, v any, present bool) any {
	if len(p) == 0 {
		return v
	}
	s := p[0]
	var child any
	if len(p) > 1 || present {
		child = skeleton(p[1:], v, present)
	}
	if s.Kind == opbus.SegIndex {
		n := s.Index
		if len(p) > 1 || present {
			n++
		}
		l := make([]any, n)
		if n > s.Index {
			l[s.Index] = child
		}
		return l
	}
	if len(p) == 1 && !present {
		return map[string]any{}
	}
	return map[string]any{s.Key: child}
}

// span is the run out[from:to] of changes below one map key.
type span struct {
	key      string
	from, to int
}

// record notes that out[from:] holds the changes below sibling k, if any.
func (w *walker) record(k string, from int) {
	if len(w.out) > from {
		w.span = append(w.span, span{key: k, from: from, to: len(w.out)})
	}
}

// sortSpans puts the sibling runs recorded since spanStart in key order:
// the members of an object come in the order of its text.
func (w *walker) sortSpans(start, spanStart int) {
	if len(w.span)-spanStart < 2 {
		w.span = w.span[:spanStart]
		return
	}
	spans := w.span[spanStart:]
	defer func() { w.span = w.span[:spanStart] }()
	slices.SortFunc(spans, func(x, y span) int { return strings.Compare(x.key, y.key) })
	w.tmp = append(w.tmp[:0], w.out[start:]...)
	at := start
	for _, s := range spans {
		at += copy(w.out[at:], w.tmp[s.from-start:s.to-start])
	}
}
