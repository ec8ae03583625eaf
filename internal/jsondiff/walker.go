package jsondiff

import (
	"slices"
	"strings"

	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// MakeFunc builds a change of the user's type C: op at the path at (only
// valid during the call: copy it), from old to new (nil for an [Add] and
// a [Remove] respectively).
type MakeFunc[C any] func(op Op, at []Segment, old, new any) C

// Walker holds the state of one comparison at a time: the path from the
// root to the current node and the changes found so far. It is reused
// (from a pool) between comparisons, not shared by concurrent ones.
type Walker[C any] struct {
	c    *Patterns
	mk   MakeFunc[C]
	path []Segment
	out  []C
	tmp  []C    // scratch for reordering sibling changes
	span []span // scratch for sibling spans
	// check makes the walk also check the new side as admission does
	// (see Walker.Precompare); bad records that it holds a value
	// admission would convert or report.
	check, bad bool
}

// span is the run out[from:to] of changes below one map key or list element.
type span struct {
	key      string
	from, to int
}

// NewWalker returns a walker that builds changes with mk.
func NewWalker[C any](mk MakeFunc[C]) *Walker[C] {
	return &Walker[C]{mk: mk, path: make([]Segment, 0, 32)}
}

// Compare returns the changes that turn old into new under the patterns
// c, in path order: maps key by key, a change of type is one change at
// that path, numbers by value ([jsonvalue.Equal]); values of other types
// are opaque leaves.
func (w *Walker[C]) Compare(c *Patterns, old, new any) []C {
	w.c = c
	w.diffKeyed(old, new, c.all, "")
	return w.done()
}

// done returns the changes found and readies w for another walk.
func (w *Walker[C]) done() []C {
	out := w.out
	w.c = nil
	w.out = nil
	w.path = w.path[:0]
	clear(w.tmp[:cap(w.tmp)])
	w.tmp = w.tmp[:0]
	w.span = w.span[:0]
	w.check, w.bad = false, false
	return out
}

// emit records a change at the current path; mask is the pattern state
// there. Ignored content is left out of the values, and a container whose
// content is all ignored counts as absent, so a map that appears only to
// hold the library's own annotation is no change.
func (w *Walker[C]) emit(op Op, old, new any, mask uint64, listKey string) {
	if w.check && op != Remove && !w.c.Plain(new, mask, len(w.path), listKey) {
		w.bad = true
	}
	if mask&w.c.ignores != 0 {
		var inOld, inNew bool
		old, inOld = w.c.Strip(old, mask, len(w.path), listKey)
		new, inNew = w.c.Strip(new, mask, len(w.path), listKey)
		switch {
		case op == Add && !inNew, op == Remove && !inOld, op == Change && !inOld && !inNew:
			return
		case op == Change && !inOld:
			op, old = Add, nil
		case op == Change && !inNew:
			op, new = Remove, nil
		}
	}
	w.out = append(w.out, w.mk(op, w.path, old, new))
}

// emitAt is emit at the child s of the current path.
func (w *Walker[C]) emitAt(s Segment, op Op, old, new any, mask uint64) {
	next, ignored, field := w.c.Step(mask, len(w.path), s)
	if ignored {
		return
	}
	w.path = append(w.path, s)
	w.emit(op, old, new, next, field)
	w.path = w.path[:len(w.path)-1]
}

// equal is jsonvalue.Equal for the walker: in a checking walk it also
// requires b to hold only what jsonvalue.Plain accepts.
func (w *Walker[C]) equal(a, b any) bool {
	return jsonvalue.EqualAt(a, b, w.check, len(w.path))
}

func (w *Walker[C]) diffKeyed(a, b any, mask uint64, listKey string) {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			w.diffMap(x, y, mask)
			return
		}
	case []any:
		if y, ok := b.([]any); ok {
			if listKey != "" && w.diffKeyedList(x, y, mask, listKey) {
				return
			}
			if w.check && listKey != "" && mask&w.c.ignores != 0 && !w.c.Plain(y, mask, len(w.path), listKey) {
				// Admission names the elements of a list it cannot key by
				// their keys where they have one, the walk below by index:
				// what each ignores may differ, so admission's check it is.
				w.bad = true
			}
			w.diffList(x, y, mask)
			return
		}
	default:
		if k := jsonvalue.KindOf(b); k != jsonvalue.KindMap && k != jsonvalue.KindList && jsonvalue.Equal(a, b) {
			if w.check && !jsonvalue.Plain(b, 0) {
				w.bad = true
			}
			return
		}
	}
	w.emit(Change, a, b, mask, listKey)
}

func (w *Walker[C]) diffMap(a, b map[string]any, mask uint64) {
	start, spanStart := len(w.out), len(w.span)
	shared := 0
	depth := len(w.path) // the level of a's keys in w.path
	pushed := false
	for k, av := range a {
		bv, inB := b[k]
		// Two maps under the key recurse straight into diffMap (one type
		// switch per entry, not three: a profile of Compare on equal Pods).
		var am, bm map[string]any
		if inB {
			shared++
			// The common case, decided without a path step: equal
			// strings (most of an object's leaves, tested inline), or
			// other equal scalars.
			switch x := av.(type) {
			case string:
				if y, ok := bv.(string); ok && x == y {
					continue
				}
			case map[string]any:
				if y, ok := bv.(map[string]any); ok {
					if len(x) == 0 && len(y) == 0 {
						continue // equal, with nothing to walk: a third of a Pod's maps
					}
					am, bm = x, y
				}
			case []any:
			default:
				if jsonvalue.SameScalar(av, bv) {
					continue
				}
			}
		}
		var next uint64
		var ignored bool
		var field string
		if mask != 0 {
			next, ignored, field = w.c.Step(mask, depth, Segment{Kind: pathsyntax.Key, Key: k})
		} else if w.c.anyDepth != nil {
			// No anchored pattern is alive: only a list key by name
			// may apply, and only a list needs one (diffKeyed and emit
			// read it for nothing else when no pattern is alive).
			if _, ok := av.([]any); ok {
				field = w.c.anyDepth[k]
			}
		}
		if ignored {
			continue
		}
		from := len(w.out)
		if !pushed {
			// One level for every key of a, pushed once: rewriting its
			// key is cheaper than a push and a pop per key.
			w.path, pushed = append(w.path, Segment{Kind: pathsyntax.Key, Key: k}), true
		}
		w.path[depth].Key = k
		switch {
		case am != nil:
			w.diffMap(am, bm, next)
		case !inB:
			w.emit(Remove, av, nil, next, field)
		default:
			w.diffKeyed(av, bv, next, field)
		}
		w.record(k, from)
	}
	if pushed {
		w.path = w.path[:depth]
	}
	if shared < len(b) {
		w.diffAdded(a, b, mask)
	}
	w.sortSpans(start, spanStart)
}

// diffAdded emits the keys of b that a lacks, for diffMap.
func (w *Walker[C]) diffAdded(a, b map[string]any, mask uint64) {
	for k, bv := range b {
		if _, inA := a[k]; inA {
			continue
		}
		from := len(w.out)
		w.emitAt(Segment{Kind: pathsyntax.Key, Key: k}, Add, nil, bv, mask)
		w.record(k, from)
	}
}

// record notes that out[from:] holds the changes below sibling k, if any.
func (w *Walker[C]) record(k string, from int) {
	if len(w.out) > from {
		w.span = append(w.span, span{key: k, from: from, to: len(w.out)})
	}
}

// sortSpans puts the sibling runs recorded since spanStart in key order.
// Map iteration order is random, so the runs arrive in any order. The
// common case, nothing to reorder, is decided inline.
func (w *Walker[C]) sortSpans(start, spanStart int) {
	if len(w.span)-spanStart < 2 {
		w.span = w.span[:spanStart]
		return
	}
	w.reorder(start, spanStart)
}

func (w *Walker[C]) reorder(start, spanStart int) {
	spans := w.span[spanStart:]
	defer func() { w.span = w.span[:spanStart] }()
	slices.SortFunc(spans, func(x, y span) int { return strings.Compare(x.key, y.key) })
	w.tmp = append(w.tmp[:0], w.out[start:]...)
	at := start
	for _, s := range spans {
		at += copy(w.out[at:], w.tmp[s.from-start:s.to-start])
	}
}
