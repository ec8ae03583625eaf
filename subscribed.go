package opbus

import "github.com/opbus/opbus/internal/jsondiff"

// subscribed is what the handlers of one kind read of its objects: the
// subtrees that hold their fields, so that a pass compares those and not
// the whole object (per-write noise such as metadata.managedFields and
// resourceVersion, and whatever no handler subscribes to, is never
// walked). roots are the map-key prefixes of the fields (the segments
// before the first list segment), with none at or below another, in path
// order; tree holds them as a tree of keys, walked in one pass (see
// [jsondiff.Roots]). whole is set when some handler reads the whole
// object: it has no fields, or a field that starts with a list segment.
// Handlers that take neither Create nor Update do not count: no diff
// decides whether they run.
type subscribed struct {
	whole bool
	roots [][]string
	tree  *keyTree
}

// keyTree is a set of concrete paths of map keys, none at or below
// another (see [jsondiff.KeyTree]).
type keyTree = jsondiff.KeyTree

// subscribedOf returns what the handlers of kind read. Handlers are
// registered before the bus starts, so it is computed once per kind.
func (b *Bus) subscribedOf(kind string) *subscribed {
	if s, ok := b.subs.Load(kind); ok {
		return s.(*subscribed)
	}
	s := &subscribed{}
	var roots [][]string
	for _, h := range b.reg.handlers {
		if !h.forKind(kind) || (!h.wants(Create) && !h.wants(Update)) {
			continue // runs on no diff: Delete and Resume read their digests only
		}
		if len(h.fields) == 0 {
			s.whole = true
			break
		}
		for _, f := range h.fields {
			var keys []string
			for _, seg := range f {
				if seg.Kind != SegKey {
					break
				}
				keys = append(keys, seg.Key)
			}
			if len(keys) == 0 {
				s.whole = true
				break
			}
			roots = append(roots, keys)
		}
	}
	if !s.whole {
		s.roots, s.tree = jsondiff.Roots(roots)
	}
	v, _ := b.subs.LoadOrStore(kind, s)
	return v.(*subscribed)
}

// subscribed returns the changes of the pass that its handlers may read:
// those at or below the subscribed roots of the kind, as the full diff
// has them (the full diff itself when it is already known, when some
// handler reads the whole object, or when a root's ancestor itself was
// added, removed or changed type). Whatever handlers do with the diff
// (touches, relevant) looks only at changes at, below or above their
// fields, and those all lie at or below a root, so it finds the same.
func (d *pass) subscribed() Diff {
	if d.diffd || d.old == nil {
		return d.changes()
	}
	if d.scopedd {
		return d.scoped
	}
	d.scopedd = true
	s := d.b.subscribedOf(d.ks.key.Kind)
	if s.whole {
		d.scoped = d.changes()
		return d.scoped
	}
	out, ok := d.b.cmpFor(d.ks.key.Kind).compareIn(d.old, d.new, s.tree)
	if !ok {
		out = d.changes()
	}
	d.scoped = out
	return out
}

// compareIn returns the changes of c.Compare(old, new) at or below the
// concrete paths of t, in path order, walking only those subtrees; it
// reports false when the full diff may hold a change above one of them
// (see [jsondiff.Walker.CompareIn]).
func (c *Comparer) compareIn(old, new map[string]any, t *keyTree) (Diff, bool) {
	w := walkers.Get().(*jsondiff.Walker[Change])
	out, ok := w.CompareIn(&c.m, old, new, t)
	walkers.Put(w)
	return out, ok
}
