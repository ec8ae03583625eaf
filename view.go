package opbus

import (
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"math/bits"
	"slices"
)

// relView is what one object sees of the objects related to it: the value of
// its RelatedField, and per related field the combined digest of the
// entries under it. A change of one related object updates its entry and
// the sums in place, so its cost does not grow with the number of related
// objects. It holds the related objects' states by reference, not a
// projection of the subscribed fields: the bus (and an informer's cache)
// keeps those states anyway, so a reference costs a pointer where a
// projection would cost a map per related object. Bus.rel.views is guarded
// by Bus.mu; a view's contents belong to the goroutine dispatching its
// object.
type relView struct {
	kinds []kindView     // by kind, in the order they appeared
	few   []*entry       // the entries while there are at most manyEntries
	many  map[Key]*entry // the entries beyond that
	sums  []sum          // by related field: the sum of the entries' shares
}

// kindView is the related objects of one kind in a view: name → the
// related object's last observed state, the value of related.<Kind>. The
// map of related.<Kind> itself is made for each pass (see root): it has one
// entry per kind, and a map kept per object would cost more than the rest
// of the view.
type kindView struct {
	kind   string
	byName map[string]any
}

// byKind returns the map of kind's related objects, nil if there are none.
func (v *relView) byKind(kind string) map[string]any {
	for _, k := range v.kinds {
		if k.kind == kind {
			return k.byName
		}
	}
	return nil
}

// root returns the value of RelatedField: kind (and each other name of
// it, see Bus.RelatedName) → name → state.
func (v *relView) root(names map[string]string) map[string]any {
	m := make(map[string]any, len(v.kinds)+len(names))
	for _, k := range v.kinds {
		m[k.kind] = k.byName
	}
	for name, kind := range names {
		if byName, ok := m[kind]; ok && m[name] == nil {
			m[name] = byName
		}
	}
	return m
}

// manyEntries is how many entries a view keeps in a slice before it
// indexes them by key: most objects have one or a few related objects,
// and a map of one costs several hundred bytes.
const manyEntries = 8

func (v *relView) get(k Key) *entry {
	if v.many != nil {
		return v.many[k]
	}
	for _, e := range v.few {
		if e.key == k {
			return e
		}
	}
	return nil
}

func (v *relView) put(e *entry) {
	switch {
	case v.many != nil:
		v.many[e.key] = e
	case len(v.few) < manyEntries:
		v.few = append(v.few, e)
	default:
		v.many = make(map[Key]*entry, 2*manyEntries)
		for _, x := range append(v.few, e) {
			v.many[x.key] = x
		}
		v.few = nil
	}
}

func (v *relView) remove(k Key) {
	if v.many != nil {
		delete(v.many, k)
		return
	}
	v.few = slices.DeleteFunc(v.few, func(e *entry) bool { return e.key == k })
}

func (v *relView) empty() bool { return len(v.few) == 0 && len(v.many) == 0 }

// entry is one related object in a view.
type entry struct {
	key Key
	doc map[string]any // its last observed state, by reference
	hs  []sum          // by related field: its share of the view's sums; zero where the field does not match it
}

// sum is a 256-bit number: a related field's value is the sum, modulo
// 2^256, of the SHA-256 digests of its entries (each entry's kind, name
// and subscribed value), so that one entry's change costs one digest,
// however many entries there are (Bellare and Micciancio's AdHash). Unlike
// the digest of a field of the object itself, which is one SHA-256 of the
// whole value, such a sum resists accidental collisions, not someone who
// crafts many related objects to make one sum pass for another.
type sum [4]uint64

func (s *sum) add(t sum) {
	var c uint64
	s[3], c = bits.Add64(s[3], t[3], 0)
	s[2], c = bits.Add64(s[2], t[2], c)
	s[1], c = bits.Add64(s[1], t[1], c)
	s[0], _ = bits.Add64(s[0], t[0], c)
}

func (s *sum) sub(t sum) {
	var c uint64
	s[3], c = bits.Sub64(s[3], t[3], 0)
	s[2], c = bits.Sub64(s[2], t[2], c)
	s[1], c = bits.Sub64(s[1], t[1], c)
	s[0], _ = bits.Sub64(s[0], t[0], c)
}

// entryName is the name under which child appears in the view of parent:
// its name in parent's namespace (or in none), namespace/name otherwise.
func entryName(parent, child Key) string {
	if child.Namespace == "" || child.Namespace == parent.Namespace {
		return child.Name
	}
	return child.Namespace + "/" + child.Name
}

// share returns the share of the related object child, entered as name
// with state doc, in related field j.
func (b *Bus) share(j int, child Key, name string, doc map[string]any) sum {
	f := &b.rel.fields[j]
	var fields []Path
	if len(f.rest) > 0 {
		fields = []Path{f.rest}
	}
	// Observed states were checked at the door: a digest cannot fail.
	d, _ := digestOf(b.cmpFor(child.Kind), doc, fields, "")
	buf := appendPath(make([]byte, 0, 64+len(name)), Path{MapKey(child.Kind), MapKey(name)})
	h := sha256.Sum256(append(buf, d[:]...))
	var s sum
	for i := range s {
		s[i] = binary.BigEndian.Uint64(h[8*i:])
	}
	return s
}

// applyRelated applies changes of related objects to the view of key,
// making it, and returns it with, if diff, the changes under RelatedField.
func (b *Bus) applyRelated(key Key, changes []relChange, diff bool) (*relView, Diff) {
	r := b.rel
	b.mu.Lock()
	v := r.views[key]
	if v == nil {
		v = &relView{sums: make([]sum, len(r.fields))}
		r.views[key] = v
	}
	b.mu.Unlock()
	var out Diff
	for _, c := range changes {
		name := entryName(key, c.child)
		e := v.get(c.child)
		var old map[string]any
		if e != nil {
			old = e.doc
		}
		if old == nil && c.doc == nil {
			continue
		}
		if diff {
			at := Path{MapKey(RelatedField), MapKey(c.child.Kind), MapKey(name)}
			switch {
			case old == nil:
				out = append(out, Change{Op: OpAdd, Path: at, New: c.doc})
			case c.doc == nil:
				out = append(out, Change{Op: OpRemove, Path: at, Old: old})
			default:
				for _, ch := range b.cmpFor(c.child.Kind).Compare(old, c.doc) {
					ch.Path = append(slices.Clip(at), ch.Path...)
					out = append(out, ch)
				}
			}
		}
		if e != nil {
			for j := range e.hs {
				v.sums[j].sub(e.hs[j])
			}
		}
		kind := v.byKind(c.child.Kind)
		if c.doc == nil {
			v.remove(c.child)
			delete(kind, name)
			if len(kind) == 0 {
				v.kinds = slices.DeleteFunc(v.kinds, func(k kindView) bool { return k.kind == c.child.Kind })
			}
			continue
		}
		if e == nil {
			e = &entry{key: c.child, hs: make([]sum, len(r.fields))}
			v.put(e)
		}
		e.doc = c.doc
		for j := range r.fields {
			e.hs[j] = sum{}
			if r.fields[j].matches(c.child, name, r.names) {
				e.hs[j] = b.share(j, c.child, name, c.doc)
				v.sums[j].add(e.hs[j])
			}
		}
		if kind == nil {
			kind = map[string]any{}
			v.kinds = append(v.kinds, kindView{c.child.Kind, kind})
		}
		kind[name] = c.doc
	}
	if v.empty() {
		b.mu.Lock()
		delete(r.views, key)
		b.mu.Unlock()
	}
	return v, out
}

// relatedAside applies o, changes of related objects only, to the view of
// ks when ks has no live incarnation to dispatch them to, and reports
// whether it did: they are then part of what its next state sees.
func (b *Bus) relatedAside(ks *keyState, o observation) bool {
	if !o.relOnly() || ks.live {
		return false
	}
	b.applyRelated(ks.key, o.rel, false)
	return true
}

// withRelated applies the changes of related objects that o carries and
// gives the pass the document its handlers see: the object's state with
// the view under RelatedField (Old too, with the same view). The diff of
// the pass is then the object's own changes and those of the related
// objects, and handlers reading related fields compute their digest.
func (b *Bus) withRelated(d *pass, o *observation) {
	if b.rel == nil {
		return
	}
	key := d.ks.key
	var v *relView
	if len(o.rel) > 0 {
		var related Diff
		v, related = b.applyRelated(key, o.rel, true)
		var own Diff
		if !o.relOnly() && d.old != nil {
			own = b.cmpFor(key.Kind).Compare(d.old, d.new)
		}
		d.diff = append(own, related...)
		slices.SortStableFunc(d.diff, func(x, y Change) int { return comparePaths(x.Path, y.Path) })
		d.diffd = true
		for _, h := range b.reg.handlers {
			if len(h.rel) > 0 {
				d.ks.setClean(h.idx, false)
			}
		}
		b.mu.Lock()
		d.relistWait = !d.force && b.rel.waitsForRelist(key)
		b.mu.Unlock()
	} else {
		b.mu.Lock()
		v = b.rel.views[key]
		d.relistWait = !d.force && b.rel.waitsForRelist(key)
		b.mu.Unlock()
	}
	if d.new == nil || (v == nil && !b.readsRelated(key.Kind)) {
		return
	}
	d.view = v
	doc := maps.Clone(d.new)
	root := map[string]any{} // no related object: the field is there, empty
	if v != nil {
		root = v.root(b.rel.names)
	}
	doc[RelatedField] = root
	if o.relOnly() {
		d.old = doc
	} else if d.old != nil {
		old := maps.Clone(d.old)
		old[RelatedField] = root
		d.old = old
	}
	d.new = doc
}

// readsRelated reports whether a handler of kind reads related objects.
func (b *Bus) readsRelated(kind string) bool {
	for _, h := range b.reg.handlers {
		if len(h.rel) > 0 && h.forKind(kind) {
			return true
		}
	}
	return false
}

// digestFor returns the digest of h's value in the pass d: of the fields
// of the object, as digestOf computes it, and for a handler that reads
// related objects, of those too, from the view's sums.
func (b *Bus) digestFor(d *pass, h *handler) (digest, error) {
	if len(h.rel) == 0 {
		return digestWrites(b.cmpOf(h, d.ks.key.Kind), d.new, h.fields, h.rev, h.writes)
	}
	buf := appendString([]byte{'Q'}, h.rev)
	if len(h.plain) > 0 || len(h.writes) > 0 {
		pd, err := digestWrites(b.cmpOf(h, d.ks.key.Kind), d.new, h.plain, "", h.writes)
		if err != nil {
			return digest{}, err
		}
		buf = append(buf, pd[:]...)
	}
	for _, j := range h.rel {
		buf = appendPath(append(buf, 'F'), b.rel.fields[j].path)
		var s sum
		if d.view != nil {
			s = d.view.sums[j]
		}
		for _, x := range s {
			buf = binary.BigEndian.AppendUint64(buf, x)
		}
	}
	h256 := sha256.Sum256(buf)
	var out digest
	copy(out[:], h256[:])
	if out.isZero() {
		out[15] = 1
	}
	return out, nil
}
