package relview

import (
	"slices"
	"sync"
)

// A Change is a change of the related object Child, carried to an object
// it relates to, or related to: Child's new state, nil when Child is gone
// or relates to that object no more.
type Change[K comparable] struct {
	Child K
	Doc   map[string]any
}

// Merge returns the changes of x that y does not change again, followed
// by y: what two changes of related objects carry once coalesced into
// one, x the older. A child is in the result as often as it is in x and y
// together less its changes in x that y changes again: once each, when x
// and y each hold a child once.
func Merge[K comparable](x, y []Change[K]) []Change[K] {
	if len(x) == 0 {
		return y
	}
	out := make([]Change[K], 0, len(x)+len(y))
	for _, c := range x {
		if !slices.ContainsFunc(y, func(n Change[K]) bool { return n.Child == c.Child }) {
			out = append(out, c)
		}
	}
	return append(out, y...)
}

// Parents is the reverse index of relations: each related object → the
// objects it relates to, as of its last observation. A related object
// that relates to nothing has no entry, so that the index holds only
// related objects that are live. It is not safe for concurrent use.
type Parents[K comparable] map[K][]K

// Relink records that child relates to the objects in to now (none: it is
// forgotten), and returns those it related to before, nil for none: the
// caller tells those not in to that child relates to them no more. The
// index keeps to; the caller must not change it after.
func (ps Parents[K]) Relink(child K, to []K) (before []K) {
	before = ps[child]
	if len(to) == 0 {
		delete(ps, child)
	} else {
		ps[child] = to
	}
	return before
}

// Views is the views of many objects, by the key of the object that sees
// each. A view is made when a change of a related object first reaches
// its object, and dropped once it holds nothing again, so that only
// objects with related objects have one. Views is safe for concurrent use
// (its zero value is empty and ready); a view's contents are not: they
// belong to the goroutine dispatching its object, the only one that opens
// and closes it.
type Views[K comparable] struct {
	mu sync.Mutex
	m  map[K]*View[K]
}

// Get returns the view of k, nil for none.
func (vs *Views[K]) Get(k K) *View[K] {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.m[k]
}

// Open returns the view of k, making an empty one with fields related
// fields if it has none.
func (vs *Views[K]) Open(k K, fields int) *View[K] {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.m[k]
	if v == nil {
		if vs.m == nil {
			vs.m = map[K]*View[K]{}
		}
		v = New[K](fields)
		vs.m[k] = v
	}
	return v
}

// Close drops the view of k if it holds no related object.
func (vs *Views[K]) Close(k K) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v := vs.m[k]; v != nil && v.Empty() {
		delete(vs.m, k)
	}
}

// Len returns the number of views.
func (vs *Views[K]) Len() int {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return len(vs.m)
}

// EntryName returns the name under which the related object name, of
// namespace ns, appears in the view of an object of namespace in: its
// name when it lives in that namespace (or in none), namespace/name
// otherwise.
func EntryName(in, ns, name string) string {
	if ns == "" || ns == in {
		return name
	}
	return ns + "/" + name
}
