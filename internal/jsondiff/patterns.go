// Package jsondiff walks two JSON-like values (see internal/jsonvalue) and
// reports the changes that turn one into the other, under a set of path
// patterns that drop changes (ignored paths) or match list elements by a
// key field (list keys).
//
// Invariants:
//   - A walk tracks the patterns still alive below a node in one 64-bit
//     mask: bit i is set while pattern i matches the path so far. At most
//     [MaxPatterns] patterns, and a node's mask depends only on its path.
//   - Changes come out sorted by path: map keys in byte order, list
//     elements by index (element changes first, then the tail's adds or
//     removes) or, for keyed lists, by key. A keyed list's order is no
//     change.
//   - Ignored content is never reported and never part of a reported
//     value; a container whose content is all ignored counts as absent.
//   - Equal inputs allocate nothing; allocation grows with the number of
//     changes, not with the size of the values. The values reported are
//     parts of the inputs (or, under ignored paths, copies), never
//     modified.
//   - The walker builds each change with a function its user gives, so
//     that a change is built once, in the user's own type.
package jsondiff

import (
	"math/bits"

	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// Segment is a step of a path, in the path syntax's plain form.
type Segment = pathsyntax.Segment

// MaxPatterns bounds the patterns of one [Patterns]: a walk tracks the
// patterns still alive below a node in one 64-bit mask.
const MaxPatterns = 64

// Op is the kind of a change.
type Op uint8

// The kinds of change.
const (
	Add    Op = iota // the path did not exist in the old value
	Change           // the path exists in both, with different values
	Remove           // the path does not exist in the new value
)

// Pattern is an anchored path pattern: an ignored path (Ignore) or the
// path of a list whose elements are identified by Field.
type Pattern struct {
	Path   []Segment
	Ignore bool
	Field  string
}

// Patterns is a compiled set of patterns. It is read-only once built, so
// safe for concurrent use. The zero Patterns has none.
type Patterns struct {
	list     []Pattern
	anyDepth map[string]string // list keys by the key holding the list, at any depth
	all      uint64            // mask with a bit for every pattern
	ignores  uint64            // mask with a bit for every ignore pattern
}

// NewPatterns compiles list, at most [MaxPatterns] anchored patterns, and
// anyDepth, the list key fields of lists held under a key at any depth.
func NewPatterns(list []Pattern, anyDepth map[string]string) Patterns {
	c := Patterns{list: list, anyDepth: anyDepth}
	if n := len(list); n == MaxPatterns {
		c.all = ^uint64(0)
	} else {
		c.all = 1<<n - 1
	}
	for i, p := range list {
		if p.Ignore {
			c.ignores |= 1 << i
		}
	}
	return c
}

// All returns the mask of the root: every pattern alive.
func (c *Patterns) All() uint64 { return c.all }

// Ignores returns the mask of the ignore patterns: a mask without these
// bits has no ignored path at or below its node.
func (c *Patterns) Ignores() uint64 { return c.ignores }

// ListKey returns the list key field of a list held under the map key k
// at any depth, or "".
func (c *Patterns) ListKey(k string) string {
	if c.anyDepth == nil {
		return ""
	}
	return c.anyDepth[k]
}

// Step moves the pattern mask from a node at depth to its child at segment
// s, and reports whether the child is ignored or holds a keyed list (the
// list key field).
func (c *Patterns) Step(mask uint64, depth int, s Segment) (next uint64, ignored bool, field string) {
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		pt := &c.list[i]
		if !pathsyntax.Matches(pt.Path[depth], s) {
			continue
		}
		if len(pt.Path) == depth+1 {
			if pt.Ignore {
				return 0, true, ""
			}
			field = pt.Field
			continue
		}
		next |= 1 << i
	}
	if field == "" && c.anyDepth != nil && s.Kind == pathsyntax.Key {
		field = c.anyDepth[s.Key]
	}
	return next, false, field
}

// Strip returns v without the content that the ignore patterns alive in
// mask (at depth) drop, and false for a container that had content, all of
// it ignored: such a container counts as absent. listKey is the field that
// names the elements of v if it is a keyed list. It copies only when mask
// has a live ignore pattern.
func (c *Patterns) Strip(v any, mask uint64, depth int, listKey string) (any, bool) {
	if mask&c.ignores == 0 {
		return v, true
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return x, true
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			next, ignored, field := c.Step(mask, depth, Segment{Kind: pathsyntax.Key, Key: k})
			if ignored {
				continue
			}
			if se, ok := c.Strip(e, next, depth+1, field); ok {
				out[k] = se
			}
		}
		return out, len(out) > 0
	case []any:
		if len(x) == 0 {
			return x, true
		}
		out := make([]any, 0, len(x))
		for i, e := range x {
			next, ignored, field := c.Step(mask, depth, ElementSegment(e, i, listKey))
			if ignored {
				continue
			}
			if se, ok := c.Strip(e, next, depth+1, field); ok {
				out = append(out, se)
			}
		}
		return out, len(out) > 0
	}
	return v, true
}

// ElementSegment addresses element e at position i of a list whose
// elements are named by listKey, if it has one.
func ElementSegment(e any, i int, listKey string) Segment {
	if listKey != "" {
		if k, ok := jsonvalue.ElementKey(e, listKey); ok {
			return Segment{Kind: pathsyntax.Match, Key: listKey, Value: k}
		}
	}
	return Segment{Kind: pathsyntax.Index, Index: i}
}

// Hollow reports, without allocating for string keys, whether v is a
// container with content, all of it ignored (see [Patterns.Strip]).
func (c *Patterns) Hollow(v any, mask uint64, depth int, listKey string) bool {
	if mask&c.ignores == 0 {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return false
		}
		for k, e := range x {
			next, ignored, field := c.Step(mask, depth, Segment{Kind: pathsyntax.Key, Key: k})
			if !ignored && !c.Hollow(e, next, depth+1, field) {
				return false
			}
		}
		return true
	case []any:
		if len(x) == 0 {
			return false
		}
		for i, e := range x {
			next, ignored, field := c.Step(mask, depth, ElementSegment(e, i, listKey))
			if !ignored && !c.Hollow(e, next, depth+1, field) {
				return false
			}
		}
		return true
	}
	return false
}

// Plain is [jsonvalue.Plain] that skips the paths the patterns ignore: v
// is at depth, with pattern state mask, and a keyed list if listKey is
// set.
func (c *Patterns) Plain(v any, mask uint64, depth int, listKey string) bool {
	if mask&c.ignores == 0 {
		return jsonvalue.Plain(v, depth)
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			next, ignored, field := c.Step(mask, depth, Segment{Kind: pathsyntax.Key, Key: k})
			if !ignored && !c.Plain(e, next, depth+1, field) {
				return false
			}
		}
		return true
	case []any:
		for i, e := range x {
			next, ignored, field := c.Step(mask, depth, ElementSegment(e, i, listKey))
			if !ignored && !c.Plain(e, next, depth+1, field) {
				return false
			}
		}
		return true
	}
	return jsonvalue.Plain(v, depth)
}
