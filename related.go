package opbus

import (
	"fmt"
	"slices"

	"github.com/opbus/opbus/internal/relist"
	"github.com/opbus/opbus/internal/relview"
)

// RelatedField is the reserved top-level field of a document that holds the
// view of the objects related to it (see [Bus.Relate]): under
// related.<Kind>.<name>, each related object's last observed state. Juju's
// adapter already puts relation data in the document a handler sees
// (relations.<endpoint>); related objects follow the same design, so that
// "my child became ready" is an ordinary field subscription:
//
//	related.Deployment[*].status.readyReplicas
//	related.Deployment.web.status.readyReplicas
//
// <name> is the related object's name when it lives in the namespace of
// the object it relates to (or in none), and namespace/name otherwise.
// Once a relation is declared, the bus ignores an object's own field of
// this name: the view takes its place.
const RelatedField = "related"

// RelateFunc returns the keys of the objects that obj, the latest observed
// state of key, relates to: a Deployment's owner, the WebApp that selects a
// Pod by label. It is called once per observation of key, on the goroutine
// that observes it, and must not block; it must not modify obj. Nil or
// empty means none.
type RelateFunc func(key Key, obj map[string]any) []Key

// relations is what the bus knows of related objects: how they are
// declared, which handler fields read them, which object each related
// object relates to, and the views of the objects related to.
type relations struct {
	// the relation functions by kind (Relate), for every kind (Options.Related),
	// and other names of related kinds (Bus.RelatedName); set before the bus starts
	relview.Decl[Key]
	fields relview.Fields[Path] // the distinct related fields of all handlers; set before the bus starts
	// guarded by Bus.mu (internal/relview, internal/relist)
	parents relview.Parents[Key] // related object → the objects it relates to, as of its last observation
	relist  relist.Relist[Key]   // the objects whose handlers reading related objects wait for the relist to end (relist.go)

	views relview.Views[Key] // object → the view of its related objects, with its own lock; a view's contents belong to the object's dispatching goroutine
}

// RelatedName lets related fields name the related objects of kind by
// name too: related.<name>... matches them, and the view shows them under
// name as well as under kind. An adapter calls it for a shorter name it
// resolved (the Kubernetes adapter: Job for Job.batch, when no other
// related kind is a Job). Before the bus starts, after Relate or
// Options.Related; a name already given to another kind is an error.
func (b *Bus) RelatedName(name, kind string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.frozen || b.rel == nil {
		return fmt.Errorf("opbus: RelatedName(%q, %q): expected a bus with relations declared that has not started", name, kind)
	}
	if err := b.rel.Rename(name, kind); err != nil {
		return fmt.Errorf("opbus: RelatedName(%q, %q): %w", name, kind, err)
	}
	return nil
}

// relChange is a change of an object related to the one whose queue holds
// it: Child's new state, or nil when Child is gone or no longer related.
type relChange = relview.Change[Key]

// relOnly reports whether o carries only changes of related objects, no
// state of its own key.
func (o *observation) relOnly() bool {
	return o.new == nil && !o.deleted && !o.retry && len(o.rel) > 0
}

// Relate declares that objects of kind relate to other objects, as fn says:
// a change of such an object (a new state, its appearance, its deletion, or
// a change of what it relates to) is a change of each object it relates to,
// dispatched through that object's queue in order with its own states.
// Handlers read related objects through [RelatedField]. The Kubernetes
// adapter declares owner references this way; a user declares any mapping.
// Relate must be called before the handlers that read related fields are
// registered, once per kind, and before the bus starts.
//
// What a handler sees: the view holds each related object's last observed
// state by reference, not a copy, and it is updated in place as related
// objects change, so Event.Old and a document kept after the handler
// returns show the view as it is now; Event.Changes lists the related
// objects' changes under related.<Kind>.<name>. Related objects are known
// from the observations made to this bus: after a restart, an object's view
// is empty until its related objects are observed again (an informer's
// first list does that). Under Run, until the source calls [Bus.Synced]
// (or Run is quiet for a while), a handler that reads related objects runs
// only on the value it last handled or after that, so that a relist in any
// order runs nothing it handled (docs/semantics.md rule 34).
func (b *Bus) Relate(kind string, fn RelateFunc) error {
	if kind == "" {
		return fmt.Errorf("opbus: Relate: empty kind: expected the kind of the related objects, such as \"Deployment\"")
	}
	if fn == nil {
		return fmt.Errorf("opbus: Relate(%q): nil function", kind)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.frozen {
		return fmt.Errorf("opbus: Relate(%q): the bus has started; declare relations before Run, Observe or Dispatch", kind)
	}
	if err := b.relations(); err != nil {
		return within(err, "opbus: Relate(%q)", kind)
	}
	if !b.rel.Declare(kind, fn) {
		return fmt.Errorf("opbus: Relate(%q): the kind's relation is declared already: one function per kind", kind)
	}
	return nil
}

// relateAny sets up relations for Options.Related.
func (b *Bus) relateAny(fn RelateFunc) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.relations(); err != nil {
		return within(err, "opbus: Options.Related")
	}
	b.rel.DeclareAny(fn)
	return nil
}

// relations makes b.rel, and ignores RelatedField from then on: the view
// takes its place in documents; b.mu is held.
func (b *Bus) relations() error {
	if b.rel != nil {
		return nil
	}
	if err := b.setIgnore(append(slices.Clone(b.reg.ignore.Every), RelatedField)); err != nil {
		return err
	}
	b.rel = &relations{parents: relview.Parents[Key]{}}
	return nil
}

// relatedField registers p for handler id if it reads related objects, and
// returns its index among the related fields, or -1 for a field of the
// object itself.
func (b *Bus) relatedField(id string, p Path) (int, error) {
	if len(p) == 0 || p[0].Kind != SegKey || p[0].Key != RelatedField {
		return -1, nil
	}
	f, ok := relview.NewField(p, Segment.syntax)
	if !ok {
		return -1, fmt.Errorf("opbus: handler %q: field %s: expected related.<Kind>.<name>.<field>, with a kind and a name that are keys or [*]", id, p)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.frozen {
		return -1, fmt.Errorf("opbus: handler %q: the bus has started; register before Run, Observe or Dispatch", id)
	}
	if b.rel == nil {
		return -1, fmt.Errorf("opbus: handler %q: field %s reads related objects, but no relation is declared: call Bus.Relate first", id, p)
	}
	if !f.Kind.Any && !b.rel.Knows(f.Kind.Key) {
		return -1, fmt.Errorf("opbus: handler %q: field %s: no relation is declared for kind %q (declared: %v), so it would never change", id, p, f.Kind.Key, b.rel.Kinds())
	}
	return b.rel.fields.Add(f, Path.Equal), nil
}

// relatedTo calls the relation function of key's kind on o, outside Bus.mu;
// nil for a kind without one or for a deletion. A panic, or a key that is
// not valid, is an error for the caller of Observe or Dispatch.
func (b *Bus) relatedTo(key Key, o *observation) (to []Key, err error) {
	b.mu.Lock()
	var fn RelateFunc
	if b.rel != nil {
		fn = b.rel.Func(key.Kind)
	}
	b.mu.Unlock()
	if fn == nil || o.deleted {
		return nil, nil
	}
	to, err = relview.Targets(fn, key, o.new, Key.validate)
	if p, ok := err.(*relview.Panic); ok {
		return nil, fmt.Errorf("opbus: the relation function of kind %q panicked on %v: %v", key.Kind, key, p.Value)
	} else if err != nil {
		return nil, within(err, "opbus: the relation function of kind %q on %v", key.Kind, key)
	}
	return to, nil
}

// relay queues o's change of key, an object of a related kind, on each
// object it relates to now or related to before; b.mu is held.
func (b *Bus) relay(key Key, o observation, to []Key) {
	r := b.rel
	if r == nil || !r.Declared(key.Kind) {
		return
	}
	doc := o.new
	if o.deleted {
		doc, to = nil, nil
	}
	for _, p := range to {
		if b.owns(p) { // else its owner sees the change itself (own.go)
			b.push(b.keyState(p), observation{rel: []relChange{{Child: key, Doc: doc}}})
		}
	}
	for _, p := range r.parents.Relink(key, to) {
		if !slices.Contains(to, p) && b.owns(p) {
			b.push(b.keyState(p), observation{rel: []relChange{{Child: key}}})
		}
	}
}

// onlyRelatedTo reports whether ks, which the caller is releasing, is the
// state of a key that the bus has never observed and that holds nothing:
// made only to carry changes of related objects to an object this bus
// does not watch (an owner reference to another kind), which its view
// (relations.views, kept apart) has taken. Such a key state is forgotten,
// as the key state of a finished deletion is: children of unknown parents
// would otherwise leave one for each parent for good. An observation of the
// object makes it again, and finds the view. b.mu is held.
func (b *Bus) onlyRelatedTo(ks *keyState) bool {
	return b.rel != nil && !ks.live && !ks.seen && !ks.ended && ks.rec == nil && ks.x == nil &&
		b.q.kq.KeyLen(ks) == 0 && !b.q.kq.Due(ks) && b.q.keys[ks.key] == ks && !b.stopping
}

// supersedes reports whether the queued observation x may be coalesced
// into y, the next one: two updates of one incarnation, or changes of
// related objects next to an update. Deletions, incarnation boundaries
// and a state a Dispatch call awaits (it returns that state's errors)
// stay.
func (b *Bus) supersedes(x, y observation) bool {
	if x.deleted || y.deleted || x.tag.Awaited {
		return false
	}
	return x.relOnly() || y.relOnly() || !b.bounds(x, y)
}

// absorb returns y, the observation that supersedes x, carrying what x
// carried that y does not: the changes of related objects that y does not
// change again, and x's own state when y has none.
func absorb(x, y observation) observation {
	y.rel = relview.Merge(x.rel, y.rel)
	if y.new == nil && x.new != nil {
		y.new, y.old, y.hasOld, y.inc = x.new, x.old, x.hasOld, x.inc
	}
	return y
}

// ownStates returns the observations of q that carry a state of their own
// key: what is saved as pending. Changes of related objects are not: the
// next run learns them from its own observations of those objects.
func ownStates(q []observation) []observation {
	out := make([]observation, 0, len(q))
	for _, o := range q {
		if !o.relOnly() {
			o.rel = nil
			out = append(out, o)
		}
	}
	return out
}
