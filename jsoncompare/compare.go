// Package jsoncompare compares two JSON texts without decoding them: it
// returns the [opbus.Diff] that [opbus.Comparer.Compare] returns for the
// two texts decoded as [opbus.Document] decodes them (integers as int64,
// exact past its range; other numbers as float64). Parts whose bytes are
// equal are equal; only values that differ are decoded, for the changes'
// Old and New. Watch events and stored objects arrive as bytes, and most of
// two successive states of an object are the same bytes.
//
// It keeps apart from the opbus package, which the bus needs, since the
// bus compares decoded documents only.
package jsoncompare

import (
	"bytes"
	"slices"
	"sync"

	"github.com/opbus/opbus"
)

// Compare returns the changes that turn the JSON text old into new, with
// default settings: nothing ignored, lists compared by index. See
// [Comparer.Compare].
func Compare(old, new []byte) (opbus.Diff, error) {
	return defaultComparer.Compare(old, new)
}

// Compare returns the changes that turn the JSON text old into new: the
// Diff that [opbus.Comparer.Compare], with the same options, returns for
// the two texts decoded as [opbus.Document] decodes (integers as int64,
// exact past its range; other numbers as float64), without decoding them.
// Parts whose bytes are equal are equal; only values that differ are
// decoded, for the changes' Old and New. Both texts are checked in full:
// one that is not a single JSON value is an error that names it (old or
// new) and the byte where it goes wrong, and no Diff.
func (c *Comparer) Compare(old, new []byte) (opbus.Diff, error) {
	a := jsonDoc{data: old, side: "old"}
	b := jsonDoc{data: new, side: "new"}
	as, bs := a.space(0), b.space(0)
	if bytes.Equal(trimSpace(old[as:]), trimSpace(new[bs:])) {
		_, _, err := a.document() // new's bytes are old's: one check settles both
		return nil, err
	}
	if as >= len(old) {
		return nil, a.errorAt(as, "want a value")
	}
	if bs >= len(new) {
		return nil, b.errorAt(bs, "want a value")
	}
	w := walkers.Get().(*walker)
	defer func() {
		w.trim()
		walkers.Put(w)
	}()
	return w.compare(c, &a, &b, as, bs)
}

var walkers = sync.Pool{New: func() any { return &walker{path: make(opbus.Path, 0, 32)} }}

// walker holds the state of one Compare: the path from the root to the
// current node, the changes found so far, and the scratch of the texts'
// containers.
type walker struct {
	c    *Comparer
	path opbus.Path
	out  opbus.Diff
	tmp  opbus.Diff // scratch for reordering sibling changes
	span []span     // scratch for sibling spans

	mem    []member       // the members of the containers being compared
	ord    []int32        // members in key order, indexes into mem
	ends   [2][]extent    // the containers of each side (jsonDoc.ends)
	late   [2]map[int]int // those noted out of order (jsonDoc.late)
	memTop int            // how far mem was used, to clear
	miss   textMiss       // where the two texts were last found to differ
}

// compare compares the documents a and b, whose values start at as and
// bs, with c.
func (w *walker) compare(c *Comparer, a, b *jsonDoc, as, bs int) (opbus.Diff, error) {
	w.c = c
	a.ends, b.ends = &w.ends[0], &w.ends[1]
	a.late, b.late = &w.late[0], &w.late[1]
	ae, be, err := w.diffJSON(a, b, as, bs, c.all, "", 0)
	if err == nil {
		err = a.end(ae)
	}
	if err == nil {
		err = b.end(be)
	}
	if err != nil {
		return nil, err
	}
	return w.out, nil
}

// maxKept bounds the scratch a pooled walker keeps after a Compare, in
// elements of each buffer: a huge document's do not stay alive, nor make
// every later call clear them.
const maxKept = 1 << 15

// trim readies w for the pool after a Compare: emptied, and without
// scratch past maxKept.
func (w *walker) trim() {
	clear(w.mem[:w.memTop]) // members point into the caller's texts
	w.mem, w.ord, w.memTop, w.miss = w.mem[:0], w.ord[:0], 0, textMiss{}
	if cap(w.mem) > maxKept {
		w.mem = nil
	}
	if cap(w.ord) > maxKept {
		w.ord = nil
	}
	for i := range w.ends {
		w.ends[i] = w.ends[i][:0]
		if cap(w.ends[i]) > maxKept {
			w.ends[i] = nil
		}
		if len(w.late[i]) > maxKept {
			w.late[i] = nil
		}
		clear(w.late[i])
	}
	w.c, w.out = nil, nil
	w.path = w.path[:0]
	clear(w.tmp[:cap(w.tmp)])
	w.tmp = w.tmp[:0]
	w.span = w.span[:0]
}

// end checks that nothing but whitespace follows the document's value.
func (t *jsonDoc) end(i int) error {
	if i = t.space(i); i < len(t.data) {
		return t.errorAt(i, "want the end of the document after its value")
	}
	return nil
}

func trimSpace(d []byte) []byte {
	for len(d) > 0 {
		switch d[len(d)-1] {
		case ' ', '\t', '\n', '\r':
			d = d[:len(d)-1]
			continue
		}
		break
	}
	return d
}

// A member is an object member of one side, found by index: its key
// (decoded) and where its value lies.
type member struct {
	key    []byte
	ks     int  // where the member starts: its key's quote
	vs, ve int  // its value's bytes
	same   bool // new's only: byte for byte the old member at the same place
}

// diffJSON compares the values at as and bs, which are known to differ
// unless both are containers, and returns the indexes past them. depth is
// the nesting of the containers that hold them.
func (w *walker) diffJSON(a, b *jsonDoc, as, bs int, mask uint64, listKey string, depth int) (ae, be int, err error) {
	switch ca, cb := a.data[as], b.data[bs]; {
	case ca == '{' && cb == '{':
		return w.diffJSONObject(a, b, as, bs, mask, depth+1)
	case ca == '[' && cb == '[' && listKey == "":
		return w.diffJSONList(a, b, as, bs, mask, depth+1)
	}
	// Anything else is decoded and compared as Compare compares it: two
	// keyed lists, a change of type, two scalars with different bytes (1
	// and 1.0 are equal numbers; "a" and "\u0061" equal strings).
	if ae, err = a.skip(as, depth); err != nil {
		return ae, be, err
	}
	if be, err = b.skip(bs, depth); err != nil {
		return ae, be, err
	}
	av, _ := decodeText(a.data, as)
	bv, _ := decodeText(b.data, bs)
	w.values(av, bv, true, true, mask, listKey)
	return ae, be, nil
}

// index appends to w.mem the members of the object at i in t,
// checking them, and returns the index past it. With ref, the members
// ref[0:n] of the other side (old) stand at w.mem[from:from+n]: a member at
// the same place whose bytes are the same is taken without a scan, so the
// parts both sides share are read once.
func (w *walker) index(t *jsonDoc, i, depth int, ref *jsonDoc, from, n int) (int, error) {
	if depth > maxJSONDepth {
		return i, t.errorAt(i, "nested past 10000 levels")
	}
	d := t.data
	j := t.space(i + 1)
	if at(t, j, '}') {
		return j + 1, nil
	}
	for k := 0; ; k++ {
		m := member{ks: j}
		if k < n && w.sameAt(t, j, ref, from+k) {
			r := w.mem[from+k]
			shift := j - r.ks
			m = member{key: r.key, ks: j, vs: r.vs + shift, ve: r.ve + shift, same: true}
		} else {
			if !at(t, j, '"') {
				return j, t.errorAt(j, "want a string key in an object")
			}
			end, hard, err := t.str(j)
			if err != nil {
				return end, err
			}
			if hard {
				m.key = []byte(decodeString(d[j:end], true))
			} else {
				m.key = d[j+1 : end-1]
			}
			if j = t.space(end); !at(t, j, ':') {
				return j, t.errorAt(j, "want ':' after an object key")
			}
			m.vs = t.space(j + 1)
			if m.ve, err = t.skip(m.vs, depth); err != nil {
				return m.ve, err
			}
		}
		w.mem = append(w.mem, m)
		w.memTop = max(w.memTop, len(w.mem))
		switch j = t.space(m.ve); {
		case at(t, j, ','):
			j = t.space(j + 1)
		case at(t, j, '}'):
			return j + 1, nil
		default:
			return j, t.errorAt(j, "want ',' or '}' after an object member")
		}
	}
}

// A textMiss records that old[from:at] equals new[from+shift:at+shift]
// and that the next bytes differ (or new ends there): a member that lies
// in that run is settled without comparing it again. Without it, a change
// at the bottom of a deep document was compared from every level down.
type textMiss struct {
	from, at, shift int
	ok              bool
}

// sameAt reports whether t's bytes at j repeat those of the member w.mem[r]
// of ref, to the end of its value: a number must also end where it does (12
// is not the start of 123).
func (w *walker) sameAt(t *jsonDoc, j int, ref *jsonDoc, r int) bool {
	m := w.mem[r]
	return w.sameBytes(t, j, ref, m.ks, m.ve)
}

// sameRange reports whether a.data[as:ae] and b.data[bs:be] are the same
// bytes, through w.miss as sameBytes.
func (w *walker) sameRange(a *jsonDoc, as, ae int, b *jsonDoc, bs, be int) bool {
	return ae-as == be-bs && w.sameBytes(b, bs, a, as, ae)
}

// sameBytes reports whether t's bytes at j repeat ref.data[ks:ve], a
// member or element that ends there (see sameAt).
func (w *walker) sameBytes(t *jsonDoc, j int, ref *jsonDoc, ks, ve int) bool {
	span := ref.data[ks:ve]
	rest := t.data[j:]
	if x := w.miss; x.ok && x.shift == j-ks && x.from <= ks && ks <= x.at {
		if ve > x.at {
			return false
		}
	} else if !bytes.HasPrefix(rest, span) {
		w.miss = textMiss{from: ks, at: ks + commonPrefix(span, rest), shift: j - ks, ok: true}
		return false
	}
	if len(rest) > len(span) && isDigit(span[len(span)-1]) {
		switch c := rest[len(span)]; {
		case isDigit(c), c == '.', c == 'e', c == 'E', c == '+', c == '-':
			return false
		}
	}
	return true
}

func (w *walker) diffJSONObject(a, b *jsonDoc, as, bs int, mask uint64, depth int) (ae, be int, err error) {
	base := len(w.mem)
	defer func() { w.mem = w.mem[:base] }()
	if ae, err = w.index(a, as, depth, nil, 0, 0); err != nil {
		return ae, be, err
	}
	na := len(w.mem) - base
	if be, err = w.index(b, bs, depth, a, base, na); err != nil {
		return ae, be, err
	}
	nb := len(w.mem) - base - na
	aFrom, bFrom := base, base+na
	start, spanStart := len(w.out), len(w.span)
	if w.inOrder(aFrom, na, bFrom, nb) {
		// The common case: the same keys in the same order (the same
		// encoder made both), each once.
		for k := range na {
			am, bm := w.mem[aFrom+k], w.mem[bFrom+k]
			if bm.same || w.sameRange(a, am.vs, am.ve, b, bm.vs, bm.ve) {
				continue
			}
			if err = w.jsonMember(a, b, &am, &bm, mask, depth); err != nil {
				return ae, be, err
			}
		}
	} else {
		// Keys in another order, added, removed or repeated (the last
		// one counts, as in encoding/json): both sides sorted by key.
		oa, ob := len(w.ord), 0
		defer func() { w.ord = w.ord[:oa] }()
		w.sortedKeys(aFrom, na)
		ob = len(w.ord)
		w.sortedKeys(bFrom, nb)
		i, j := oa, ob
		for i < ob || j < len(w.ord) {
			var am, bm *member
			switch {
			case j == len(w.ord):
				am = &member{}
				*am = w.mem[w.ord[i]]
			case i == ob:
				bm = &member{}
				*bm = w.mem[w.ord[j]]
			default:
				x, y := w.mem[w.ord[i]], w.mem[w.ord[j]]
				switch bytes.Compare(x.key, y.key) {
				case -1:
					am = &x
				case 1:
					bm = &y
				default:
					am, bm = &x, &y
				}
			}
			if am != nil {
				i++
			}
			if bm != nil {
				j++
			}
			if am != nil && bm != nil && w.sameRange(a, am.vs, am.ve, b, bm.vs, bm.ve) {
				continue
			}
			if err = w.jsonMember(a, b, am, bm, mask, depth); err != nil {
				return ae, be, err
			}
		}
	}
	w.sortSpans(start, spanStart)
	return ae, be, nil
}

// inOrder reports whether both sides have the same keys in the same order,
// none repeated.
func (w *walker) inOrder(aFrom, na, bFrom, nb int) bool {
	if na != nb {
		return false
	}
	for k := range na {
		if bm := w.mem[bFrom+k]; !bm.same && !bytes.Equal(w.mem[aFrom+k].key, bm.key) {
			return false
		}
	}
	if na <= 16 {
		for i := aFrom; i < aFrom+na; i++ {
			for j := i + 1; j < aFrom+na; j++ {
				if bytes.Equal(w.mem[i].key, w.mem[j].key) {
					return false
				}
			}
		}
		return true
	}
	oa := len(w.ord)
	w.sortedKeys(aFrom, na)
	distinct := len(w.ord) - oa
	w.ord = w.ord[:oa]
	return distinct == na
}

// sortedKeys appends to w.ord the members w.mem[from:from+n] in key order,
// keeping of a repeated key only its last member.
func (w *walker) sortedKeys(from, n int) {
	o := len(w.ord)
	for i := from; i < from+n; i++ {
		w.ord = append(w.ord, int32(i))
	}
	s := w.ord[o:]
	slices.SortStableFunc(s, func(x, y int32) int { return bytes.Compare(w.mem[x].key, w.mem[y].key) })
	out := o
	for i, m := range s {
		if i+1 < len(s) && bytes.Equal(w.mem[m].key, w.mem[s[i+1]].key) {
			continue
		}
		w.ord[out] = m
		out++
	}
	w.ord = w.ord[:out]
}

// jsonMember compares an object member present on one side or both (am or
// bm nil when absent), as diffMap compares a key.
func (w *walker) jsonMember(a, b *jsonDoc, am, bm *member, mask uint64, depth int) error {
	var k string
	if am != nil {
		k = string(am.key)
	} else {
		k = string(bm.key)
	}
	next, ignored, field := w.c.step(mask, len(w.path), opbus.MapKey(k))
	if ignored {
		return nil
	}
	from := len(w.out)
	w.path = append(w.path, opbus.MapKey(k))
	var err error
	switch {
	case bm == nil:
		v, _ := decodeText(a.data, am.vs)
		w.values(v, nil, true, false, next, field)
	case am == nil:
		v, _ := decodeText(b.data, bm.vs)
		w.values(nil, v, false, true, next, field)
	default:
		_, _, err = w.diffJSON(a, b, am.vs, bm.vs, next, field, depth)
	}
	w.path = w.path[:len(w.path)-1]
	w.record(k, from)
	return err
}

// diffJSONList compares two lists by index, as diffList does, walking both
// in step: an element is read once, and nothing is kept per element.
func (w *walker) diffJSONList(a, b *jsonDoc, as, bs int, mask uint64, depth int) (ae, be int, err error) {
	if depth > maxJSONDepth {
		return as, bs, a.errorAt(as, "nested past 10000 levels")
	}
	ia, ib := a.space(as+1), b.space(bs+1)
	doneA, doneB := at(a, ia, ']'), at(b, ib, ']')
	if doneA {
		ae = ia + 1
	}
	if doneB {
		be = ib + 1
	}
	for i := 0; !doneA || !doneB; i++ {
		var ea, eb int
		switch {
		case !doneA && !doneB:
			if ea, err = a.skip(ia, depth); err != nil {
				return ea, eb, err
			}
			if w.sameBytes(b, ib, a, ia, ea) {
				eb = ib + (ea - ia)
				break
			}
			if eb, err = b.skip(ib, depth); err != nil {
				return ea, eb, err
			}
			next, ignored, field := w.c.step(mask, len(w.path), opbus.ListIndex(i))
			if ignored {
				break
			}
			w.path = append(w.path, opbus.ListIndex(i))
			_, _, err = w.diffJSON(a, b, ia, ib, next, field, depth)
			w.path = w.path[:len(w.path)-1]
			if err != nil {
				return ea, eb, err
			}
		case !doneB: // new's elements past old's end, added
			if eb, err = b.skip(ib, depth); err != nil {
				return ae, eb, err
			}
			w.jsonElement(b, ib, i, true, mask)
		default: // old's elements past new's end, removed
			if ea, err = a.skip(ia, depth); err != nil {
				return ea, be, err
			}
			w.jsonElement(a, ia, i, false, mask)
		}
		if !doneA {
			if ia, doneA, err = a.nextElement(ea); err != nil {
				return ia, be, err
			}
			if doneA {
				ae = ia
			}
		}
		if !doneB {
			if ib, doneB, err = b.nextElement(eb); err != nil {
				return ae, ib, err
			}
			if doneB {
				be = ib
			}
		}
	}
	return ae, be, nil
}

// at reports whether t holds c at i.
func at(t *jsonDoc, i int, c byte) bool { return i < len(t.data) && t.data[i] == c }

// nextElement moves past the list element that ends at e: to the next
// element, or past the list's end (done).
func (t *jsonDoc) nextElement(e int) (i int, done bool, err error) {
	switch i = t.space(e); {
	case at(t, i, ','):
		return t.space(i + 1), false, nil
	case at(t, i, ']'):
		return i + 1, true, nil
	}
	return i, false, t.errorAt(i, "want ',' or ']' after a list element")
}

// jsonElement reports list element i, at vs in t, added or removed.
func (w *walker) jsonElement(t *jsonDoc, vs, i int, added bool, mask uint64) {
	next, ignored, field := w.c.step(mask, len(w.path), opbus.ListIndex(i))
	if ignored {
		return
	}
	v, _ := decodeText(t.data, vs)
	w.path = append(w.path, opbus.ListIndex(i))
	if added {
		w.values(nil, v, false, true, next, field)
	} else {
		w.values(v, nil, true, false, next, field)
	}
	w.path = w.path[:len(w.path)-1]
}

// commonPrefix returns the length of the longest common prefix of x and y,
// comparing in blocks (bytes.Equal is vectorised) before bytes.
func commonPrefix(x, y []byte) int {
	n := min(len(x), len(y))
	i := 0
	for i+256 <= n && bytes.Equal(x[i:i+256], y[i:i+256]) {
		i += 256
	}
	for i < n && x[i] == y[i] {
		i++
	}
	return i
}
