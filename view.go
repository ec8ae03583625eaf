package opbus

import (
	"crypto/sha256"
	"slices"

	"github.com/opbus/opbus/internal/relview"
)

// relView is what one object sees of the objects related to it: the value of
// its RelatedField, and per related field the combined digest of the
// entries under it. internal/relview holds its storage, its costs and its
// invariants; Bus.rel.views has its own lock, and a view's contents belong
// to the goroutine dispatching its object.
type relView = relview.View[Key]

// share returns the share of the related object child, entered as name
// with state doc, in related field j.
func (b *Bus) share(j int, child Key, name string, doc map[string]any) relview.Sum {
	f := &b.rel.fields[j]
	var fields []Path
	if len(f.Rest) > 0 {
		fields = []Path{f.Rest}
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
	v := r.views.Open(key, len(r.fields))
	var out Diff
	for _, c := range changes {
		name := relview.EntryName(key.Namespace, c.Child.Namespace, c.Child.Name)
		old := v.Set(c.Child, c.Child.Kind, name, c.Doc, func(j int) relview.Sum {
			if !r.fields[j].Matches(c.Child.Kind, name, r.Names()) {
				return relview.Sum{}
			}
			return b.share(j, c.Child, name, c.Doc)
		})
		if !diff || (old == nil && c.Doc == nil) {
			continue
		}
		at := Path{MapKey(RelatedField), MapKey(c.Child.Kind), MapKey(name)}
		switch {
		case old == nil:
			out = append(out, Change{Op: OpAdd, Path: at, New: c.Doc})
		case c.Doc == nil:
			out = append(out, Change{Op: OpRemove, Path: at, Old: old})
		default:
			for _, ch := range b.cmpFor(c.Child.Kind).Compare(old, c.Doc) {
				ch.Path = append(slices.Clip(at), ch.Path...)
				out = append(out, ch)
			}
		}
	}
	r.views.Close(key)
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
				d.ks.clean.Set(h.idx, false)
			}
		}
	}
	if v == nil {
		v = b.rel.views.Get(key)
	}
	b.mu.Lock()
	d.relistWait = !d.force && b.rel.relist.Waits(key)
	b.mu.Unlock()
	if d.new == nil || (v == nil && !b.readsRelated(key.Kind, nil)) {
		return
	}
	d.view = v
	// No related object: the field is there, empty (a nil view's Root).
	d.new, d.old = relview.With(RelatedField, v.Root(b.rel.Names()), d.new, d.old, o.relOnly())
}

// readsRelated reports whether a handler of kind reads related objects;
// with rec, whether one has handled a value of rec's object (rec holds
// its digest).
func (b *Bus) readsRelated(kind string, rec *record) bool {
	for _, h := range b.reg.handlers {
		if len(h.rel) > 0 && h.forKind(kind) && (rec == nil || !rec.Digests[h.idx].isZero()) {
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
		buf = d.view.Sum(j).Append(appendPath(append(buf, 'F'), b.rel.fields[j].Path))
	}
	h256 := sha256.Sum256(buf)
	var out digest
	copy(out[:], h256[:])
	if out.isZero() {
		out[15] = 1
	}
	return out, nil
}
