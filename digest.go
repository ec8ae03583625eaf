package opbus

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/opbus/opbus/internal/jsonvalue"
)

// digest identifies a subscribed value: the first 128 bits of the SHA-256
// of its canonical encoding. SHA-256 rather than a 64-bit non-cryptographic
// hash because a digest decides whether a handler runs, and part of an
// object is often written by someone else (a tenant's custom resource): a
// collision-resistant hash means nobody can craft a new value that passes
// for the old one. With the SHA extensions of current x86 and ARM CPUs it
// costs about as much per byte as FNV-1a (see BenchmarkDigest).
type digest [16]byte

func (d digest) isZero() bool { return d == digest{} }

// deletedDigest stands for "the object is gone" in the slots of delete
// handlers, so a handled deletion is not handled again.
var deletedDigest = digest{0: 'd', 1: 'e', 2: 'l', 15: 1}

// encoder writes the canonical encoding of values: type tags, lengths and
// end markers make it prefix-free; map keys are sorted; numbers are
// normalised so that 3, int64(3), 3.0 and json.Number("3") encode alike;
// elements of keyed lists are sorted by key, since their order is no
// change; ignored paths are left out.
type encoder struct {
	cmp  *Comparer
	buf  []byte
	keys []string // scratch stack of sorted map keys
	idx  []int    // scratch stack of sorted list positions
	path Path     // for errors
}

var encoders = sync.Pool{New: func() any { return &encoder{} }}

// digestOf computes the digest of the values at fields in obj (the whole
// object when fields is empty), leaving out paths cmp ignores. The digest
// covers which fields they are, not only their values, and the handler
// revision rev ("" for none), so that a handler whose subscription or
// revision changes sees every value as new.
func digestOf(cmp *Comparer, obj any, fields []Path, rev string) (digest, error) {
	return digestWrites(cmp, obj, fields, rev, nil)
}

// digestWrites is digestOf for a handler that writes the paths writes of
// its own object (On.Writes): they are part of the digest as its revision
// is, so that changing them runs the handler once more. cmp ignores them.
func digestWrites(cmp *Comparer, obj any, fields []Path, rev string, writes []Path) (digest, error) {
	e := encoders.Get().(*encoder)
	defer func() {
		e.cmp = nil
		clear(e.keys[:cap(e.keys)])
		encoders.Put(e)
	}()
	e.cmp, e.buf, e.keys, e.idx, e.path = cmp, e.buf[:0], e.keys[:0], e.idx[:0], e.path[:0]
	e.buf = append(e.buf, 'R')
	e.str(rev)
	if len(writes) > 0 {
		e.buf = binary.AppendUvarint(append(e.buf, 'X'), uint64(len(writes)))
		for _, w := range writes {
			e.buf = appendPath(e.buf, w)
		}
	}
	if len(fields) == 0 {
		e.buf = append(e.buf, 'W') // the whole object
		if err := e.value(obj, cmp.m.All(), ""); err != nil {
			return digest{}, err
		}
	}
	for _, f := range fields {
		e.buf = appendPath(append(e.buf, 'F'), f)
		if err := e.field(obj, f); err != nil {
			return digest{}, err
		}
	}
	sum := sha256.Sum256(e.buf)
	var d digest
	copy(d[:], sum[:])
	if d.isZero() {
		d[15] = 1
	}
	return d, nil
}

func (e *encoder) field(obj any, f Path) error {
	if !f.isPattern() {
		v, ok := lookup(obj, f)
		mask, ignored, field := e.cmp.at(f)
		if !ok || ignored || e.cmp.m.Hollow(v, mask, len(f), field) {
			e.buf = append(e.buf, 'A') // absent
			return nil
		}
		e.path = append(e.path[:0], f...)
		return e.value(v, mask, field)
	}
	// A pattern: every match, in path order, each with its concrete path.
	type match struct {
		at  Path
		val any
	}
	var ms []match
	eachMatch(obj, f, func(at Path, val any) {
		ms = append(ms, match{e.cmp.keyed(obj, at), val})
	})
	slices.SortFunc(ms, func(a, b match) int { return comparePaths(a.at, b.at) })
	e.buf = binary.AppendUvarint(append(e.buf, 'M'), uint64(len(ms)))
	for _, m := range ms {
		e.buf = appendPath(e.buf, m.at)
		mask, ignored, field := e.cmp.at(m.at)
		if ignored {
			e.buf = append(e.buf, 'A')
			continue
		}
		e.path = append(e.path[:0], m.at...)
		if err := e.value(m.val, mask, field); err != nil {
			return err
		}
	}
	return nil
}

// appendPath appends the canonical encoding of p to buf: the number of
// segments, then per segment a tag for its kind followed by its
// length-prefixed strings or its index. It is prefix-free, so two paths
// never encode alike and nothing written after a path can pass for part
// of it, whatever bytes their keys hold.
func appendPath(buf []byte, p Path) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(p)))
	for _, s := range p {
		switch s.Kind {
		case SegKey:
			buf = appendString(append(buf, 'k'), s.Key)
		case SegIndex:
			buf = binary.AppendUvarint(append(buf, 'i'), uint64(s.Index))
		case SegAny:
			buf = append(buf, '*')
		case SegMatch:
			buf = appendString(append(buf, 'm'), s.Key)
			buf = appendString(buf, s.Value)
		default:
			buf = binary.AppendUvarint(append(buf, '?'), uint64(s.Kind))
		}
	}
	return buf
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func (e *encoder) str(s string) { e.buf = appendString(e.buf, s) }

func (e *encoder) value(v any, mask uint64, listKey string) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, 'n')
	case bool:
		if x {
			e.buf = append(e.buf, 't')
		} else {
			e.buf = append(e.buf, 'f')
		}
	case string:
		e.buf = append(e.buf, 's')
		e.str(x)
	case map[string]any:
		return e.object(x, mask)
	case []any:
		return e.list(x, mask, listKey)
	default:
		n, ok := jsonvalue.AsNumber(v)
		if !ok || !n.Finite() {
			return validate(v, e.path)
		}
		if n.Big != "" {
			e.buf = append(e.buf, 'I')
			e.str(n.Big)
		} else if n.IsInt {
			e.buf = binary.BigEndian.AppendUint64(append(e.buf, 'i'), uint64(n.I))
		} else {
			e.buf = binary.BigEndian.AppendUint64(append(e.buf, 'd'), math.Float64bits(n.F))
		}
	}
	return nil
}

func (e *encoder) object(m map[string]any, mask uint64) error {
	e.buf = append(e.buf, 'm')
	base := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	keys := e.keys[base:]
	slices.Sort(keys)
	depth := len(e.path)
	for _, k := range keys {
		v := m[k] // once: the profile of bench BenchmarkDispatch showed a second lookup per key
		next, ignored, field := uint64(0), false, ""
		if mask != 0 {
			next, ignored, field = e.cmp.step(mask, depth, MapKey(k))
		} else if _, list := v.([]any); list {
			field = e.cmp.m.ListKey(k) // only a list needs its key
		}
		if ignored || (next&e.cmp.m.Ignores() != 0 && e.cmp.m.Hollow(v, next, depth+1, field)) {
			continue
		}
		e.buf = append(e.buf, 'k')
		e.str(k)
		e.path = append(e.path, MapKey(k))
		err := e.value(v, next, field)
		e.path = e.path[:depth]
		if err != nil {
			return err
		}
	}
	e.keys = e.keys[:base]
	e.buf = append(e.buf, 'e')
	return nil
}

func (e *encoder) list(l []any, mask uint64, listKey string) error {
	e.buf = append(e.buf, 'l')
	base := len(e.idx)
	for i := range l {
		e.idx = append(e.idx, i)
	}
	order := e.idx[base:]
	if listKey != "" && len(l) > 1 && jsonvalue.Keyable(l, listKey) && !jsonvalue.HasDuplicateKeys(l, listKey) {
		slices.SortFunc(order, func(a, b int) int {
			ka, _ := jsonvalue.ElementKey(l[a], listKey)
			kb, _ := jsonvalue.ElementKey(l[b], listKey)
			return strings.Compare(ka, kb)
		})
	}
	depth := len(e.path)
	for _, i := range order {
		seg := ListIndex(i)
		if listKey != "" {
			if k, ok := jsonvalue.ElementKey(l[i], listKey); ok {
				seg = Segment{Kind: SegMatch, Key: listKey, Value: k}
			}
		}
		next, ignored, field := uint64(0), false, ""
		if mask != 0 { // else no pattern applies: list keys by name are for map keys
			next, ignored, field = e.cmp.step(mask, depth, seg)
		}
		if ignored || (next&e.cmp.m.Ignores() != 0 && e.cmp.m.Hollow(l[i], next, depth+1, field)) {
			continue
		}
		e.path = append(e.path, seg)
		err := e.value(l[i], next, field)
		e.path = e.path[:depth]
		if err != nil {
			return err
		}
	}
	e.idx = e.idx[:base]
	e.buf = append(e.buf, 'e')
	return nil
}

// keyed returns a copy of the concrete path p in root with the indexes of
// keyed lists replaced by [field=value] segments, so that a match does not
// depend on the position of an element whose list's order is no change.
func (c *Comparer) keyed(root any, p Path) Path {
	out := slices.Clone(p)
	mask, field, v := c.m.All(), "", root
	for i, s := range p {
		if s.Kind == SegIndex && field != "" {
			if l, ok := v.([]any); ok && s.Index < len(l) {
				if k, ok := jsonvalue.ElementKey(l[s.Index], field); ok {
					out[i] = Segment{Kind: SegMatch, Key: field, Value: k}
				}
			}
		}
		mask, _, field = c.step(mask, i, out[i])
		v, _ = step(v, s)
	}
	return out
}
