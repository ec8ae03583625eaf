package jsondiff

import (
	"github.com/opbus/opbus/internal/jsonvalue"
	"github.com/opbus/opbus/internal/pathsyntax"
)

func (w *Walker[C]) diffList(a, b []any, mask uint64) {
	n := min(len(a), len(b))
	depth, pushed := len(w.path), false
	for i := 0; i < n; i++ {
		// As in diffMap: scalars settled inline, two maps straight into
		// diffMap, two empty ones skipped.
		var am, bm map[string]any
		switch x := a[i].(type) {
		case map[string]any:
			if y, ok := b[i].(map[string]any); ok {
				if len(x) == 0 && len(y) == 0 {
					continue
				}
				am, bm = x, y
			}
		case []any:
		default:
			if jsonvalue.SameScalar(x, b[i]) {
				continue
			}
		}
		var next uint64
		var ignored bool
		var field string
		if mask != 0 { // else no pattern applies: list keys by name are for map keys
			next, ignored, field = w.c.Step(mask, depth, Segment{Kind: pathsyntax.Index, Index: i})
		}
		if ignored {
			continue
		}
		if !pushed {
			// One level for every element, as in diffMap.
			w.path, pushed = append(w.path, Segment{Kind: pathsyntax.Index, Index: i}), true
		}
		w.path[depth].Index = i
		if am != nil {
			w.diffMap(am, bm, next)
		} else {
			w.diffKeyed(a[i], b[i], next, field)
		}
	}
	if pushed {
		w.path = w.path[:depth]
	}
	for i := n; i < len(b); i++ {
		w.emitAt(Segment{Kind: pathsyntax.Index, Index: i}, Add, nil, b[i], mask)
	}
	for i := n; i < len(a); i++ {
		w.emitAt(Segment{Kind: pathsyntax.Index, Index: i}, Remove, a[i], nil, mask)
	}
}

// diffKeyedList compares lists whose elements are identified by field. It
// reports false, having done nothing, when the lists cannot be keyed.
func (w *Walker[C]) diffKeyedList(a, b []any, mask uint64, field string) bool {
	// Equal lists have no changes, however they are keyed: the commonest
	// case, decided without reading a key (bench BenchmarkDiff/pod-equal).
	first := 0
	if len(a) == len(b) {
		for first < len(a) && w.equal(a[first], b[first]) {
			first++
		}
		if first == len(a) {
			return true
		}
	}
	// Fast path, allocation-free: same keys in the same order, which is the
	// common case. Keys are formatted only for elements that differ.
	if len(a) == len(b) && jsonvalue.SameDistinctKeys(a, b, field) {
		start, spanStart := len(w.out), len(w.span)
		for i := first; i < len(a); i++ {
			if i > first && w.equal(a[i], b[i]) {
				continue // (a[first] and b[first] differ: the loop above stopped there)
			}
			k, _ := jsonvalue.ElementKey(a[i], field)
			from := len(w.out)
			w.keyedElement(k, field, a[i], b[i], true, true, mask)
			w.record(k, from)
		}
		w.sortSpans(start, spanStart)
		return true
	}
	if !jsonvalue.Keyable(a, field) || !jsonvalue.Keyable(b, field) {
		return false
	}
	ia, ok := jsonvalue.KeyIndex(a, field)
	if !ok {
		return false
	}
	ib, ok := jsonvalue.KeyIndex(b, field)
	if !ok {
		return false
	}
	w.diffByKey(a, b, ia, ib, mask, field)
	return true
}

// diffByKey compares the keyed lists a and b, whose elements' indexes by
// key are ia and ib, element by element of the same key.
func (w *Walker[C]) diffByKey(a, b []any, ia, ib map[string]int, mask uint64, field string) {
	start, spanStart := len(w.out), len(w.span)
	for _, ea := range a {
		k, _ := jsonvalue.ElementKey(ea, field)
		from := len(w.out)
		j, inB := ib[k]
		if inB {
			w.keyedElement(k, field, ea, b[j], true, true, mask)
		} else {
			w.keyedElement(k, field, ea, nil, true, false, mask)
		}
		w.record(k, from)
	}
	for _, eb := range b {
		k, _ := jsonvalue.ElementKey(eb, field)
		if _, inA := ia[k]; inA {
			continue
		}
		from := len(w.out)
		w.keyedElement(k, field, nil, eb, false, true, mask)
		w.record(k, from)
	}
	w.sortSpans(start, spanStart)
}

func (w *Walker[C]) keyedElement(k, field string, a, b any, inA, inB bool, mask uint64) {
	seg := Segment{Kind: pathsyntax.Match, Key: field, Value: k}
	next, ignored, sub := w.c.Step(mask, len(w.path), seg)
	if ignored {
		return
	}
	w.path = append(w.path, seg)
	switch {
	case inA && inB:
		w.diffKeyed(a, b, next, sub)
	case inA:
		w.emit(Remove, a, nil, next, sub)
	default:
		w.emit(Add, nil, b, next, sub)
	}
	w.path = w.path[:len(w.path)-1]
}
