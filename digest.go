package opbus

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/opbus/opbus/internal/canonical"
	"github.com/opbus/opbus/internal/decode"
	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
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

// encoders holds the encoders of the canonical encoding that digests
// hash (see [canonical.Encoder]).
var encoders = sync.Pool{New: func() any { return &canonical.Encoder{} }}

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
	e := encoders.Get().(*canonical.Encoder)
	defer func() {
		e.Release()
		encoders.Put(e)
	}()
	e.Reset(&cmp.m)
	e.Buf = canonical.AppendString(append(e.Buf, 'R'), rev)
	if len(writes) > 0 {
		e.Buf = binary.AppendUvarint(append(e.Buf, 'X'), uint64(len(writes)))
		for _, w := range writes {
			e.Buf = appendPath(e.Buf, w)
		}
	}
	if len(fields) == 0 {
		e.Buf = append(e.Buf, 'W') // the whole object
		if err := e.Value(obj, cmp.m.All(), ""); err != nil {
			return digest{}, valueError(err)
		}
	}
	for _, f := range fields {
		e.Buf = appendPath(append(e.Buf, 'F'), f)
		if err := encodeField(e, cmp, obj, f); err != nil {
			return digest{}, valueError(err)
		}
	}
	sum := sha256.Sum256(e.Buf)
	var d digest
	copy(d[:], sum[:])
	if d.isZero() {
		d[15] = 1
	}
	return d, nil
}

// encodeField appends to e the encoding of the value at the field f of
// obj, or of every value at the pattern f, each with its concrete path.
func encodeField(e *canonical.Encoder, cmp *Comparer, obj any, f Path) error {
	if !f.isPattern() {
		v, ok := lookup(obj, f)
		mask, ignored, field := cmp.at(f)
		if !ok || ignored || cmp.m.Hollow(v, mask, len(f), field) {
			e.Buf = append(e.Buf, 'A') // absent
			return nil
		}
		setPath(e, f)
		return e.Value(v, mask, field)
	}
	// A pattern: every match, in path order, each with its concrete path.
	type match struct {
		at  Path
		val any
	}
	var ms []match
	eachMatch(obj, f, func(at Path, val any) {
		ms = append(ms, match{cmp.keyed(obj, at), val})
	})
	slices.SortFunc(ms, func(a, b match) int { return comparePaths(a.at, b.at) })
	e.Buf = binary.AppendUvarint(append(e.Buf, 'M'), uint64(len(ms)))
	for _, m := range ms {
		e.Buf = appendPath(e.Buf, m.at)
		mask, ignored, field := cmp.at(m.at)
		if ignored {
			e.Buf = append(e.Buf, 'A')
			continue
		}
		setPath(e, m.at)
		if err := e.Value(m.val, mask, field); err != nil {
			return err
		}
	}
	return nil
}

// setPath sets the path of e's next value to p.
func setPath(e *canonical.Encoder, p Path) {
	e.Path = e.Path[:0]
	for _, s := range p {
		e.Path = append(e.Path, s.syntax())
	}
}

// appendPath appends the canonical encoding of p to buf: the number of
// segments, then each segment (see [canonical.AppendSegment]). It is
// prefix-free, so two paths never encode alike and nothing written after
// a path can pass for part of it, whatever bytes their keys hold.
func appendPath(buf []byte, p Path) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(p)))
	for _, s := range p {
		buf = canonical.AppendSegment(buf, pathsyntax.Kind(s.Kind), s.Key, s.Value, s.Index)
	}
	return buf
}

// keyed returns a copy of the concrete path p in root with the indexes of
// keyed lists replaced by [field=value] segments, so that a match does not
// depend on the position of an element whose list's order is no change.
func (c *Comparer) keyed(root any, p Path) Path { return c.rekey(root, p, nil) }

// rekey is keyed for the indexes that keep (nil for all) allows: it is
// given the index's position in p, its list and the list's key field.
func (c *Comparer) rekey(root any, p Path, keep func(i int, l []any, field string) bool) Path {
	out := slices.Clone(p)
	mask, field, v := c.m.All(), "", root
	for i, s := range p {
		if s.Kind == SegIndex && field != "" {
			if l, ok := v.([]any); ok && s.Index < len(l) && (keep == nil || keep(i, l, field)) {
				if k, ok := jsonvalue.ElementKey(l[s.Index], field); ok {
					out[i] = Segment{Kind: SegMatch, Key: field, Value: k}
				}
			}
		}
		mask, _, field = c.step(mask, i, out[i])
		v, _ = decode.Step(v, s.syntax())
	}
	return out
}

// appendString appends s, length-prefixed, to buf (see
// [canonical.AppendString]): the record codecs write strings so too.
func appendString(buf []byte, s string) []byte { return canonical.AppendString(buf, s) }
