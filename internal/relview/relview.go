// Package relview is the bookkeeping of related objects: what is declared
// of relations (Decl: the relation function of each kind, other names of
// kinds; Fields: the related fields handlers read, as NewField parses
// them), which objects each related object relates to (Parents, the
// reverse index), and the storage of what one object sees of the objects
// related to it (View): per kind, name → the related object's last
// observed state (under EntryName), and per related field the combined
// digest (a Sum) of the entries under it; Views keeps them by object. Which changes reach which object, and what a handler sees
// and when it runs, is the owner's policy; this package only keeps the
// books.
//
// Invariants of the books:
//   - Parents holds an entry only for a related object that relates to
//     something: Relink with no objects removes it.
//   - Views holds a view only while it holds a related object, once its
//     owner closes it after a change: views of objects whose related
//     objects are all gone do not pile up.
//   - Fields holds each path once; a field's index never changes, so it
//     is the index of its sum in every view.
//   - Decl holds at most one function per kind; Name never gives a name
//     that is one kind's to another.
//   - Merge keeps the newer change of a child, and every child either
//     side carries.
//
// Invariants of a View:
//   - A View holds each related object at most once, under its key, with
//     its kind and the name it appears under in the view (both given by
//     the caller, the same for one key each time).
//   - Sums[j] is always the sum, modulo 2^256, of the entries' shares in
//     field j: Set takes an entry's old shares out before it puts the new
//     ones in, so one change costs one share per field however many
//     entries there are.
//   - The map of a kind holds exactly the entries of that
//     kind, and a kind with no entry left has no map.
//   - States are held by reference, never copied: the caller keeps them
//     anyway, and a reference costs a pointer where a copy costs a map.
//
// A View is not safe for concurrent use: it belongs to the goroutine that
// dispatches its object.
package relview

import (
	"encoding/binary"
	"maps"
	"math/bits"
	"slices"
)

// Sum is a 256-bit number: a related field's value is the sum, modulo
// 2^256, of the SHA-256 digests of its entries, so that one entry's change
// costs one digest, however many entries there are (Bellare and
// Micciancio's AdHash). It resists accidental collisions, not someone who
// crafts many related objects to make one sum pass for another.
type Sum [4]uint64

// SumOf returns the 256-bit number whose big-endian bytes are h.
func SumOf(h [32]byte) Sum {
	var s Sum
	for i := range s {
		for _, c := range h[8*i : 8*i+8] {
			s[i] = s[i]<<8 | uint64(c)
		}
	}
	return s
}

// Add sets s to s + t modulo 2^256.
func (s *Sum) Add(t Sum) {
	var c uint64
	s[3], c = bits.Add64(s[3], t[3], 0)
	s[2], c = bits.Add64(s[2], t[2], c)
	s[1], c = bits.Add64(s[1], t[1], c)
	s[0], _ = bits.Add64(s[0], t[0], c)
}

// Append appends s to b as 32 big-endian bytes, most significant word
// first: the bytes SumOf reads back.
func (s Sum) Append(b []byte) []byte {
	for _, x := range s {
		b = binary.BigEndian.AppendUint64(b, x)
	}
	return b
}

// Sub sets s to s - t modulo 2^256.
func (s *Sum) Sub(t Sum) {
	var c uint64
	s[3], c = bits.Sub64(s[3], t[3], 0)
	s[2], c = bits.Sub64(s[2], t[2], c)
	s[1], c = bits.Sub64(s[1], t[1], c)
	s[0], _ = bits.Sub64(s[0], t[0], c)
}

// View is what one object sees of the objects related to it, keyed by K.
// A change of one related object updates its entry and the sums in place,
// so its cost does not grow with the number of related objects. It holds
// the related objects' states by reference: its owner (and an informer's
// cache) keeps those states anyway.
type View[K comparable] struct {
	kinds []kindView      // by kind, in the order they appeared
	few   []*entry[K]     // the entries while there are at most manyEntries
	many  map[K]*entry[K] // the entries beyond that
	sums  []Sum           // by related field: the sum of the entries' shares
}

// kindView is the related objects of one kind: name → state.
type kindView struct {
	kind   string
	byName map[string]any
}

// entry is one related object in a view.
type entry[K comparable] struct {
	key K
	doc map[string]any // its last observed state, by reference
	hs  []Sum          // by related field: its share of the sums; zero where the field does not match it
}

// manyEntries is how many entries a view keeps in a slice before it
// indexes them by key: most objects have one or a few related objects,
// and a map of one costs several hundred bytes.
const manyEntries = 8

// New returns an empty view with fields related fields.
func New[K comparable](fields int) *View[K] {
	return &View[K]{sums: make([]Sum, fields)}
}

// Sum returns the sum of related field j: zero for a nil view.
func (v *View[K]) Sum(j int) Sum {
	if v == nil {
		return Sum{}
	}
	return v.sums[j]
}

// Doc returns the state of the related object k, nil if it is not in v.
func (v *View[K]) Doc(k K) map[string]any {
	if e := v.get(k); e != nil {
		return e.doc
	}
	return nil
}

// Empty reports whether v holds no related object.
func (v *View[K]) Empty() bool { return len(v.few) == 0 && len(v.many) == 0 }

// ByKind returns the map name → state of kind's related objects, nil if
// there are none.
func (v *View[K]) ByKind(kind string) map[string]any {
	for _, k := range v.kinds {
		if k.kind == kind {
			return k.byName
		}
	}
	return nil
}

// Root returns a new map kind → name → state, with each other name of a
// kind in names (name → kind) mapped to that kind's map, unless the other
// name is a kind in v itself. For a nil view it is a new empty map. The
// caller makes it for each pass rather than keeping one per object: it
// has one entry per kind, and a map kept per object would cost more than
// the rest of the view.
func (v *View[K]) Root(names map[string]string) map[string]any {
	if v == nil {
		return map[string]any{}
	}
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

// Set makes doc the state of the related object k, of kind, appearing as
// name; a nil doc removes it. share(j) gives its share in field j, zero
// where field j does not match it; it is called for each field, only when
// doc is not nil. It returns k's state before, nil if k was not in v.
func (v *View[K]) Set(k K, kind, name string, doc map[string]any, share func(j int) Sum) (old map[string]any) {
	e := v.get(k)
	if e != nil {
		old = e.doc
		for j := range e.hs {
			v.sums[j].Sub(e.hs[j])
		}
	}
	byName := v.ByKind(kind)
	if doc == nil {
		if e == nil {
			return nil
		}
		v.remove(k)
		delete(byName, name)
		if len(byName) == 0 {
			v.kinds = slices.DeleteFunc(v.kinds, func(x kindView) bool { return x.kind == kind })
		}
		return old
	}
	if e == nil {
		e = &entry[K]{key: k, hs: make([]Sum, len(v.sums))}
		v.put(e)
	}
	e.doc = doc
	for j := range e.hs {
		e.hs[j] = share(j)
		v.sums[j].Add(e.hs[j])
	}
	if byName == nil {
		byName = map[string]any{}
		v.kinds = append(v.kinds, kindView{kind, byName})
	}
	byName[name] = doc
	return old
}

// With returns what a handler sees of an object and its view: its state
// now and before, each a shallow copy with root (see Root) under field;
// old nil stays nil. When only related objects changed (same), the state
// before is the state now, view and all: the view changed in place.
func With(field string, root, now, old map[string]any, same bool) (map[string]any, map[string]any) {
	doc := maps.Clone(now)
	doc[field] = root
	switch {
	case same:
		old = doc
	case old != nil:
		old = maps.Clone(old)
		old[field] = root
	}
	return doc, old
}

func (v *View[K]) get(k K) *entry[K] {
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

func (v *View[K]) put(e *entry[K]) {
	switch {
	case v.many != nil:
		v.many[e.key] = e
	case len(v.few) < manyEntries:
		v.few = append(v.few, e)
	default:
		v.many = make(map[K]*entry[K], 2*manyEntries)
		for _, x := range append(v.few, e) {
			v.many[x.key] = x
		}
		v.few = nil
	}
}

func (v *View[K]) remove(k K) {
	if v.many != nil {
		delete(v.many, k)
		return
	}
	v.few = slices.DeleteFunc(v.few, func(e *entry[K]) bool { return e.key == k })
}
