package opbus

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/opbus/opbus/internal/jsondiff"
	"github.com/opbus/opbus/internal/pathsyntax"
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

// Comparer computes diffs with fixed settings. Build it once with
// [NewComparer]; it is safe for concurrent use.
type Comparer struct {
	patterns []pattern         // as written: for the checks of registration and reorderable
	anyDepth map[string]string // list keys by the key holding the list
	m        jsondiff.Patterns // compiled, for the walks
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
	if len(c.patterns) > jsondiff.MaxPatterns {
		return nil, fmt.Errorf("opbus: %d ignored and list-key paths: at most %d are supported", len(c.patterns), jsondiff.MaxPatterns)
	}
	compiled := make([]jsondiff.Pattern, len(c.patterns))
	for i, p := range c.patterns {
		compiled[i] = jsondiff.Pattern{Path: p.path.syntax(), Ignore: p.ignore, Field: p.field}
	}
	c.m = jsondiff.NewPatterns(compiled, c.anyDepth)
	return c, nil
}

// syntax returns p in the path syntax's plain form.
func (p Path) syntax() []pathsyntax.Segment {
	out := make([]pathsyntax.Segment, len(p))
	for i, s := range p {
		out[i] = s.syntax()
	}
	return out
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
	w := walkers.Get().(*jsondiff.Walker[Change])
	out := w.Compare(&c.m, old, new)
	walkers.Put(w)
	return out
}

// walkers holds the walkers of internal/jsondiff, which build each change
// as a Change with newChange.
var walkers = sync.Pool{New: func() any { return jsondiff.NewWalker(newChange) }}

// ops are the Ops of internal/jsondiff's.
var ops = [...]Op{jsondiff.Add: OpAdd, jsondiff.Change: OpChange, jsondiff.Remove: OpRemove}

// newChange builds the change op at the path at from old to new, with a
// Path of its own.
func newChange(op jsondiff.Op, at []pathsyntax.Segment, old, new any) Change {
	p := make(Path, len(at))
	for i, s := range at {
		p[i] = fromSyntax(s)
	}
	return Change{Op: ops[op], Path: p, Old: old, New: new}
}

// step moves the pattern mask from a node at depth to its child at segment
// s, and reports whether the child is ignored or holds a keyed list.
func (c *Comparer) step(mask uint64, depth int, s Segment) (next uint64, ignored bool, field string) {
	return c.m.Step(mask, depth, s.syntax())
}

// at returns the pattern state at the concrete path p.
func (c *Comparer) at(p Path) (mask uint64, ignored bool, field string) {
	mask = c.m.All()
	for i, s := range p {
		if mask, ignored, field = c.step(mask, i, s); ignored {
			return 0, true, ""
		}
	}
	return mask, false, field
}

// stripped returns a copy of obj without the paths c ignores, or obj itself
// when c ignores nothing in it.
func (c *Comparer) stripped(obj map[string]any) map[string]any {
	v, ok := c.m.Strip(obj, c.m.All(), 0, "")
	if !ok {
		return map[string]any{}
	}
	m, _ := v.(map[string]any)
	return m
}
