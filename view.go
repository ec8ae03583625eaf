package opbus

import (
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"slices"

	"github.com/opbus/opbus/internal/relview"
)

// relView is what one object sees of the objects related to it: the value of
// its RelatedField, and per related field the combined digest of the
// entries under it (internal/relview holds its storage and invariants). A
// change of one related object updates its entry and the sums in place, so
// its cost does not grow with the number of related objects. It holds the
// related objects' states by reference: the bus (and an informer's cache)
// keeps those states anyway. Bus.rel.views is guarded by Bus.mu; a view's
// contents belong to the goroutine dispatching its object. The map of
// related.<Kind> itself is made for each pass (see View.Root): it has one
// entry per kind, and a map kept per object would cost more than the rest
// of the view.
type relView = relview.View[Key]

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
func (b *Bus) share(j int, child Key, name string, doc map[string]any) relview.Sum {
	f := &b.rel.fields[j]
	var fields []Path
	if len(f.rest) > 0 {
		fields = []Path{f.rest}
	}
	// Observed states were checked at the door: a digest cannot fail.
	d, _ := digestOf(b.cmpFor(child.Kind), doc, fields, "")
	buf := appendPath(make([]byte, 0, 64+len(name)), Path{MapKey(child.Kind), MapKey(name)})
	return relview.SumOf(sha256.Sum256(append(buf, d[:]...)))
}

// applyRelated applies changes of related objects to the view of key,
// making it, and returns it with, if diff, the changes under RelatedField.
func (b *Bus) applyRelated(key Key, changes []relChange, diff bool) (*relView, Diff) {
	r := b.rel
	b.mu.Lock()
	v := r.views[key]
	if v == nil {
		v = relview.New[Key](len(r.fields))
		r.views[key] = v
	}
	b.mu.Unlock()
	var out Diff
	for _, c := range changes {
		name := entryName(key, c.child)
		old := v.Doc(c.child)
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
		v.Set(c.child, c.child.Kind, name, c.doc, func(j int) relview.Sum {
			if !r.fields[j].matches(c.child, name, r.names) {
				return relview.Sum{}
			}
			return b.share(j, c.child, name, c.doc)
		})
	}
	if v.Empty() {
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
		root = v.Root(b.rel.names)
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
		for _, x := range d.view.Sum(j) {
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
