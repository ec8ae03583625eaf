package opbus

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/opbus/opbus/internal/jsonvalue"
)

// Op is the kind of a [Change], in kopf's vocabulary.
type Op string

// The kinds of change.
const (
	OpAdd    Op = "add"    // the path did not exist in the old object
	OpChange Op = "change" // the path exists in both, with different values
	OpRemove Op = "remove" // the path does not exist in the new object
)

// Change is one difference between two objects. Old is nil for [OpAdd] and
// New is nil for [OpRemove]; a JSON null is a value, so an absent key that
// becomes null is an add.
type Change struct {
	Op   Op
	Path Path
	Old  any
	New  any
}

// String formats the change on one line, values in compact JSON.
func (c Change) String() string {
	at := c.Path.String()
	if at == "" {
		at = "(root)"
	}
	switch c.Op {
	case OpAdd:
		return fmt.Sprintf("add %s = %s", at, jsonText(c.New))
	case OpRemove:
		return fmt.Sprintf("remove %s (was %s)", at, jsonText(c.Old))
	}
	return fmt.Sprintf("change %s: %s → %s", at, jsonText(c.Old), jsonText(c.New))
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// Diff is a list of changes, sorted by path: map keys in byte order, list
// elements by index (element changes first, then the tail's adds or
// removes) or, for keyed lists, by key value.
type Diff []Change

// String formats the diff one change per line.
func (d Diff) String() string {
	var b strings.Builder
	for i, c := range d {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.String())
	}
	return b.String()
}

// CompareOptions configures a [Comparer]. The zero value compares everything
// and addresses list elements by index.
type CompareOptions struct {
	// Ignore lists path patterns whose changes are dropped: every change at
	// or below a matching path. Patterns are anchored at the root.
	Ignore []string

	// ListKeys maps a list's path pattern to the field that identifies its
	// elements, so that elements are matched by that field (a reordering alone
	// is no change) and addressed as [field=value]. A pattern of a single key,
	// such as "containers", matches a list held under that key at any depth;
	// a longer pattern, such as "spec.ports", is anchored at the root. A list
	// whose elements do not all have distinct scalar values in that field is
	// compared by index.
	ListKeys map[string]string
}

// maxPatterns bounds the anchored patterns of one Comparer: a walk tracks the
// patterns still alive below a node in one 64-bit mask.
const maxPatterns = 64

// Comparer computes diffs with fixed settings. Build it once with
// [NewComparer]; it is safe for concurrent use.
type Comparer struct {
	patterns []pattern
	anyDepth map[string]string // list keys by the key holding the list
	all      uint64            // mask with a bit for every pattern
	ignores  uint64            // mask with a bit for every ignore pattern
}

type pattern struct {
	path   Path
	ignore bool   // drop changes at or below
	field  string // list key field, when not ignore
}

// NewComparer validates the options and returns a Comparer. A bad path
// pattern is an error naming it. Nil options mean the zero CompareOptions.
func NewComparer(opts *CompareOptions) (*Comparer, error) {
	c := &Comparer{}
	if opts == nil {
		return c, nil
	}
	for _, s := range opts.Ignore {
		p, err := ParsePath(s)
		if err != nil {
			return nil, within(err, "opbus: ignored path")
		}
		c.patterns = append(c.patterns, pattern{path: p, ignore: true})
	}
	for _, s := range slices.Sorted(maps.Keys(opts.ListKeys)) {
		field := opts.ListKeys[s]
		if field == "" {
			return nil, fmt.Errorf("opbus: list key for %s: empty field name", s)
		}
		p, err := ParsePath(s)
		if err != nil {
			return nil, within(err, "opbus: list key path")
		}
		if len(p) == 1 && p[0].Kind == SegKey {
			if c.anyDepth == nil {
				c.anyDepth = map[string]string{}
			}
			c.anyDepth[p[0].Key] = field
			continue
		}
		c.patterns = append(c.patterns, pattern{path: p, field: field})
	}
	if len(c.patterns) > maxPatterns {
		return nil, fmt.Errorf("opbus: %d ignored and list-key paths: at most %d are supported", len(c.patterns), maxPatterns)
	}
	if n := len(c.patterns); n == maxPatterns {
		c.all = ^uint64(0)
	} else {
		c.all = 1<<n - 1
	}
	for i, p := range c.patterns {
		if p.ignore {
			c.ignores |= 1 << i
		}
	}
	return c, nil
}

// ignoresAll reports whether every path the pattern p stands for is
// ignored.
func (c *Comparer) ignoresAll(p Path) bool {
	for _, pt := range c.patterns {
		if pt.ignore && pt.path.coversAll(p) {
			return true
		}
	}
	return false
}

// ignored reports whether changes at the concrete path p are dropped.
func (c *Comparer) ignored(p Path) bool {
	for _, pt := range c.patterns {
		if pt.ignore && pt.path.covers(p) {
			return true
		}
	}
	return false
}

var defaultComparer = &Comparer{}

// Compare returns the changes that turn old into new, with default settings:
// nothing ignored, lists compared by index. See [Comparer.Compare].
func Compare(old, new any) Diff {
	return defaultComparer.Compare(old, new)
}

// Compare returns the changes that turn old into new. Maps are compared key
// by key; a change of type (map to string, list to map) is one change at that
// path; numbers compare by value across int, int64, float64 and json.Number.
// Values of other types are compared with reflect.DeepEqual as opaque leaves
// ([validDocument] reports them). Equal inputs allocate nothing; allocation grows
// with the number of changes, not with the size of the objects.
func (c *Comparer) Compare(old, new any) Diff {
	w := walkers.Get().(*walker)
	w.c = c
	w.diff(old, new, c.all)
	out := w.out
	w.reset()
	walkers.Put(w)
	return out
}

var walkers = sync.Pool{New: func() any { return &walker{path: make(Path, 0, 32)} }}

// walker holds the state of one Compare: the path from the root to the
// current node and the changes found so far.
type walker struct {
	c    *Comparer
	path Path
	out  Diff
	tmp  Diff   // scratch for reordering sibling changes
	span []span // scratch for sibling spans
	// check makes the walk also check the new side as admission does
	// (precompare); bad records that it holds a value admission would
	// convert or report.
	check, bad bool
}

// span is the run out[from:to] of changes below one map key or list element.
type span struct {
	key      string
	from, to int
}

func (w *walker) reset() {
	w.c = nil
	w.out = nil
	w.path = w.path[:0]
	clear(w.tmp[:cap(w.tmp)])
	w.tmp = w.tmp[:0]
	w.span = w.span[:0]
	w.check, w.bad = false, false
}

// emit records a change at the current path; mask is the pattern state
// there. Ignored content is left out of the values, and a container whose
// content is all ignored counts as absent, so a map that appears only to
// hold the library's own annotation is no change.
func (w *walker) emit(op Op, old, new any, mask uint64, listKey string) {
	if w.check && op != OpRemove && !w.c.plain(new, mask, len(w.path), listKey) {
		w.bad = true
	}
	if mask&w.c.ignores != 0 {
		var inOld, inNew bool
		old, inOld = w.c.strip(old, mask, len(w.path), listKey)
		new, inNew = w.c.strip(new, mask, len(w.path), listKey)
		switch {
		case op == OpAdd && !inNew, op == OpRemove && !inOld, op == OpChange && !inOld && !inNew:
			return
		case op == OpChange && !inOld:
			op, old = OpAdd, nil
		case op == OpChange && !inNew:
			op, new = OpRemove, nil
		}
	}
	p := make(Path, len(w.path))
	copy(p, w.path)
	w.out = append(w.out, Change{Op: op, Path: p, Old: old, New: new})
}

// child returns the pattern mask below segment s of the current path and
// what the patterns say of that child: ignored, or a list key field.
func (w *walker) child(mask uint64, s Segment) (next uint64, ignored bool, field string) {
	return w.c.step(mask, len(w.path), s)
}

// step moves the pattern mask from a node at depth to its child at segment
// s, and reports whether the child is ignored or holds a keyed list.
func (c *Comparer) step(mask uint64, depth int, s Segment) (next uint64, ignored bool, field string) {
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		pt := &c.patterns[i]
		if !pt.path[depth].matches(s) {
			continue
		}
		if len(pt.path) == depth+1 {
			if pt.ignore {
				return 0, true, ""
			}
			field = pt.field
			continue
		}
		next |= 1 << i
	}
	if field == "" && c.anyDepth != nil && s.Kind == SegKey {
		field = c.anyDepth[s.Key]
	}
	return next, false, field
}

// at returns the pattern state at the concrete path p.
func (c *Comparer) at(p Path) (mask uint64, ignored bool, field string) {
	mask = c.all
	for i, s := range p {
		if mask, ignored, field = c.step(mask, i, s); ignored {
			return 0, true, ""
		}
	}
	return mask, false, field
}

func (w *walker) diff(a, b any, mask uint64) {
	w.diffKeyed(a, b, mask, "")
}

func (w *walker) diffKeyed(a, b any, mask uint64, listKey string) {
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
			if w.check && listKey != "" && mask&w.c.ignores != 0 && !w.c.plain(y, mask, len(w.path), listKey) {
				// Admission names the elements of a list it cannot key by
				// their keys where they have one, the walk below by index:
				// what each ignores may differ, so admission's check it is.
				w.bad = true
			}
			w.diffList(x, y, mask)
			return
		}
	default:
		if jsonvalue.KindOf(b) != jsonvalue.KindMap && jsonvalue.KindOf(b) != jsonvalue.KindList && Equal(a, b) {
			if w.check && !jsonvalue.Plain(b, 0) {
				w.bad = true
			}
			return
		}
	}
	w.emit(OpChange, a, b, mask, listKey)
}

func (w *walker) diffMap(a, b map[string]any, mask uint64) {
	start := len(w.out)
	spanStart := len(w.span)
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
			next, ignored, field = w.c.step(mask, depth, MapKey(k))
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
			w.path, pushed = append(w.path, MapKey(k)), true
		}
		w.path[depth].Key = k
		switch {
		case am != nil:
			w.diffMap(am, bm, next)
		case !inB:
			w.emit(OpRemove, av, nil, next, field)
		default:
			w.diffKeyed(av, bv, next, field)
		}
		if len(w.out) > from {
			w.record(k, from)
		}
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
func (w *walker) diffAdded(a, b map[string]any, mask uint64) {
	for k, bv := range b {
		if _, inA := a[k]; inA {
			continue
		}
		next, ignored, field := w.child(mask, MapKey(k))
		if ignored {
			continue
		}
		from := len(w.out)
		w.path = append(w.path, MapKey(k))
		w.emit(OpAdd, nil, bv, next, field)
		w.path = w.path[:len(w.path)-1]
		w.span = append(w.span, span{key: k, from: from, to: len(w.out)})
	}
}

// record notes that out[from:] holds the changes below sibling k, if any.
func (w *walker) record(k string, from int) {
	if len(w.out) > from {
		w.span = append(w.span, span{key: k, from: from, to: len(w.out)})
	}
}

// sortSpans puts the sibling runs recorded since spanStart in key order.
// Map iteration order is random, so the runs arrive in any order. The
// common case, nothing to reorder, is decided inline.
func (w *walker) sortSpans(start, spanStart int) {
	if len(w.span)-spanStart < 2 {
		w.span = w.span[:spanStart]
		return
	}
	w.reorder(start, spanStart)
}

func (w *walker) reorder(start, spanStart int) {
	spans := w.span[spanStart:]
	defer func() { w.span = w.span[:spanStart] }()
	slices.SortFunc(spans, func(x, y span) int { return strings.Compare(x.key, y.key) })
	w.tmp = append(w.tmp[:0], w.out[start:]...)
	at := start
	for _, s := range spans {
		at += copy(w.out[at:], w.tmp[s.from-start:s.to-start])
	}
}

func (w *walker) diffList(a, b []any, mask uint64) {
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
			next, ignored, field = w.c.step(mask, depth, ListIndex(i))
		}
		if ignored {
			continue
		}
		if !pushed {
			// One level for every element, as in diffMap.
			w.path, pushed = append(w.path, ListIndex(i)), true
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
		next, ignored, field := w.child(mask, ListIndex(i))
		if ignored {
			continue
		}
		w.path = append(w.path, ListIndex(i))
		w.emit(OpAdd, nil, b[i], next, field)
		w.path = w.path[:len(w.path)-1]
	}
	for i := n; i < len(a); i++ {
		next, ignored, field := w.child(mask, ListIndex(i))
		if ignored {
			continue
		}
		w.path = append(w.path, ListIndex(i))
		w.emit(OpRemove, a[i], nil, next, field)
		w.path = w.path[:len(w.path)-1]
	}
}

// diffKeyedList compares lists whose elements are identified by field. It
// reports false, having done nothing, when the lists cannot be keyed.
func (w *walker) diffKeyedList(a, b []any, mask uint64, field string) bool {
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
	return true
}

func (w *walker) keyedElement(k, field string, a, b any, inA, inB bool, mask uint64) {
	seg := Segment{Kind: SegMatch, Key: field, Value: k}
	next, ignored, sub := w.child(mask, seg)
	if ignored {
		return
	}
	w.path = append(w.path, seg)
	switch {
	case inA && inB:
		w.diffKeyed(a, b, next, sub)
	case inA:
		w.emit(OpRemove, a, nil, next, sub)
	default:
		w.emit(OpAdd, nil, b, next, sub)
	}
	w.path = w.path[:len(w.path)-1]
}

// strip returns v without the content that the ignore patterns alive in
// mask (at depth) drop, and false for a container that had content, all of
// it ignored: such a container counts as absent. listKey is the field that
// names the elements of v if it is a keyed list. It copies only when mask
// has a live ignore pattern.
func (c *Comparer) strip(v any, mask uint64, depth int, listKey string) (any, bool) {
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
			next, ignored, field := c.step(mask, depth, MapKey(k))
			if ignored {
				continue
			}
			if se, ok := c.strip(e, next, depth+1, field); ok {
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
			next, ignored, field := c.step(mask, depth, elementSegment(e, i, listKey))
			if ignored {
				continue
			}
			if se, ok := c.strip(e, next, depth+1, field); ok {
				out = append(out, se)
			}
		}
		return out, len(out) > 0
	}
	return v, true
}

// elementSegment addresses element e at position i of a list whose
// elements are named by listKey, if it has one.
func elementSegment(e any, i int, listKey string) Segment {
	if listKey != "" {
		if k, ok := jsonvalue.ElementKey(e, listKey); ok {
			return Segment{Kind: SegMatch, Key: listKey, Value: k}
		}
	}
	return ListIndex(i)
}

// hollow reports, without allocating for string keys, whether v is a
// container with content, all of it ignored (see strip).
func (c *Comparer) hollow(v any, mask uint64, depth int, listKey string) bool {
	if mask&c.ignores == 0 {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return false
		}
		for k, e := range x {
			next, ignored, field := c.step(mask, depth, MapKey(k))
			if !ignored && !c.hollow(e, next, depth+1, field) {
				return false
			}
		}
		return true
	case []any:
		if len(x) == 0 {
			return false
		}
		for i, e := range x {
			next, ignored, field := c.step(mask, depth, elementSegment(e, i, listKey))
			if !ignored && !c.hollow(e, next, depth+1, field) {
				return false
			}
		}
		return true
	}
	return false
}

// stripped returns a copy of obj without the paths c ignores, or obj itself
// when c ignores nothing in it.
func (c *Comparer) stripped(obj map[string]any) map[string]any {
	v, ok := c.strip(obj, c.all, 0, "")
	if !ok {
		return map[string]any{}
	}
	m, _ := v.(map[string]any)
	return m
}
