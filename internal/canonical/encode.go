package canonical

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"

	"github.com/opbus/opbus/internal/jsondiff"
	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// Encoder writes the canonical encoding of values, the bytes a digest
// hashes: type tags, lengths and end markers make it prefix-free; map keys
// are sorted; numbers are normalised so that 3, int64(3), 3.0 and
// json.Number("3") encode alike; elements of keyed lists are sorted by
// key, since their order is no change; ignored paths are left out. The
// encoding is persisted (as digests in records): it never changes.
//
// An Encoder is reused between encodings (from a pool), not shared by
// concurrent ones.
type Encoder struct {
	Buf  []byte               // the encoding so far; callers append their own tags
	Path []pathsyntax.Segment // where the next Value is, for its depth and errors

	p    *jsondiff.Patterns
	keys []string // scratch stack of sorted map keys
	idx  []int    // scratch stack of sorted list positions
}

// Reset readies e for an encoding under the patterns p.
func (e *Encoder) Reset(p *jsondiff.Patterns) {
	e.p, e.Buf, e.Path, e.keys, e.idx = p, e.Buf[:0], e.Path[:0], e.keys[:0], e.idx[:0]
}

// Release drops what e refers to, before it goes back to a pool.
func (e *Encoder) Release() {
	e.p = nil
	clear(e.keys[:cap(e.keys)])
	clear(e.Path[:cap(e.Path)])
}

// AppendSegment appends the canonical encoding of one path segment to buf:
// a tag for its kind followed by its length-prefixed strings or its index.
// It takes the segment's fields, so that callers holding segments of
// another struct type encode them without converting.
func AppendSegment(buf []byte, kind pathsyntax.Kind, key, value string, index int) []byte {
	switch kind {
	case pathsyntax.Key:
		return AppendString(append(buf, 'k'), key)
	case pathsyntax.Index:
		return binary.AppendUvarint(append(buf, 'i'), uint64(index))
	case pathsyntax.Any:
		return append(buf, '*')
	case pathsyntax.Match:
		buf = AppendString(append(buf, 'm'), key)
		return AppendString(buf, value)
	}
	return binary.AppendUvarint(append(buf, '?'), uint64(kind))
}

// AppendString appends s, length-prefixed, to buf.
func AppendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// Value appends the encoding of v, at e.Path with pattern state mask (a
// keyed list if listKey is set), leaving out what the patterns ignore. A
// value that is not canonical is an *[Error].
func (e *Encoder) Value(v any, mask uint64, listKey string) error {
	switch x := v.(type) {
	case nil:
		e.Buf = append(e.Buf, 'n')
	case bool:
		if x {
			e.Buf = append(e.Buf, 't')
		} else {
			e.Buf = append(e.Buf, 'f')
		}
	case string:
		e.Buf = append(e.Buf, 's')
		e.Buf = AppendString(e.Buf, x)
	case map[string]any:
		return e.object(x, mask)
	case []any:
		return e.list(x, mask, listKey)
	default:
		n, ok := jsonvalue.AsNumber(v)
		if !ok || !n.Finite() {
			return Validate(v, e.Path)
		}
		if n.Big != "" {
			e.Buf = append(e.Buf, 'I')
			e.Buf = AppendString(e.Buf, n.Big)
		} else if n.IsInt {
			e.Buf = binary.BigEndian.AppendUint64(append(e.Buf, 'i'), uint64(n.I))
		} else {
			e.Buf = binary.BigEndian.AppendUint64(append(e.Buf, 'd'), math.Float64bits(n.F))
		}
	}
	return nil
}

func (e *Encoder) object(m map[string]any, mask uint64) error {
	e.Buf = append(e.Buf, 'm')
	base := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	keys := e.keys[base:]
	slices.Sort(keys)
	depth := len(e.Path)
	for _, k := range keys {
		v := m[k] // once: the profile of bench BenchmarkDispatch showed a second lookup per key
		next, ignored, field := uint64(0), false, ""
		if mask != 0 {
			next, ignored, field = e.p.Step(mask, depth, key(k))
		} else if _, list := v.([]any); list {
			field = e.p.ListKey(k) // only a list needs its key
		}
		if ignored || (next&e.p.Ignores() != 0 && e.p.Hollow(v, next, depth+1, field)) {
			continue
		}
		e.Buf = append(e.Buf, 'k')
		e.Buf = AppendString(e.Buf, k)
		e.Path = append(e.Path, key(k))
		err := e.Value(v, next, field)
		e.Path = e.Path[:depth]
		if err != nil {
			return err
		}
	}
	e.keys = e.keys[:base]
	e.Buf = append(e.Buf, 'e')
	return nil
}

func (e *Encoder) list(l []any, mask uint64, listKey string) error {
	e.Buf = append(e.Buf, 'l')
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
	depth := len(e.Path)
	for _, i := range order {
		seg := index(i)
		if listKey != "" {
			if k, ok := jsonvalue.ElementKey(l[i], listKey); ok {
				seg = pathsyntax.Segment{Kind: pathsyntax.Match, Key: listKey, Value: k}
			}
		}
		next, ignored, field := uint64(0), false, ""
		if mask != 0 { // else no pattern applies: list keys by name are for map keys
			next, ignored, field = e.p.Step(mask, depth, seg)
		}
		if ignored || (next&e.p.Ignores() != 0 && e.p.Hollow(l[i], next, depth+1, field)) {
			continue
		}
		e.Path = append(e.Path, seg)
		err := e.Value(l[i], next, field)
		e.Path = e.Path[:depth]
		if err != nil {
			return err
		}
	}
	e.idx = e.idx[:base]
	e.Buf = append(e.Buf, 'e')
	return nil
}
