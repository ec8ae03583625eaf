package k8s

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/opbus/opbus"
)

// ListOptions narrows [Client.List]. The zero value lists the objects of
// the kind in the event object's namespace (every object, for a
// cluster-scoped kind or object).
type ListOptions struct {
	// Namespace lists the objects of this namespace instead of the event
	// object's; AllNamespaces lists those of every namespace the Source
	// watches.
	Namespace     string
	AllNamespaces bool
	// LabelSelector keeps the objects whose labels match it, in the syntax
	// of kubectl's --selector.
	LabelSelector string
	// Controlled keeps the objects whose controller (the owner reference
	// with controller: true) is the event's object, by uid: its children,
	// as Apply creates them.
	Controlled bool
}

// Get returns the object of kind, namespace and name from the informer
// cache of the Source, as the handler's other reads see it: kind is a
// kind the Source watches, spelt as in keys ([KindOf]: "ConfigMap",
// "Job.batch") or by its kind alone when one watched resource has it
// ("Job"). namespace "" means the event object's, for a namespaced kind.
// An object the cache does not hold is an error for which
// apierrors.IsNotFound is true. The object is the caller's own copy.
// Get sends no request: to read a kind the handlers do not run on, watch
// it as a [Resource] (ReadOnly). ctx is not used; it is there for a
// future read that might wait.
func (c *Client) Get(ctx context.Context, kind, namespace, name string) (*unstructured.Unstructured, error) {
	if c.err != nil {
		return nil, c.err
	}
	r, err := c.s.kindNamed(kind)
	if err != nil {
		return nil, fmt.Errorf("k8s: Get for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	if !r.namespaced {
		namespace = ""
	} else if namespace == "" {
		namespace = c.ev.Key.Namespace
	}
	u, ok := r.cached(opbus.Key{Kind: r.keyKind, Namespace: namespace, Name: name})
	if !ok {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), name)
	}
	return u.DeepCopy(), nil
}

// List returns the objects of kind (as for [Client.Get]) that the
// informer cache of the Source holds and opts keeps, sorted by namespace
// and name, each the caller's own copy. It sends no request. Informers
// that [Options].Informers gives without an indexer (ctrlmgr's, for a
// cache of some namespaces) cannot be listed: List returns an error.
func (c *Client) List(ctx context.Context, kind string, opts *ListOptions) ([]*unstructured.Unstructured, error) {
	if c.err != nil {
		return nil, c.err
	}
	if opts == nil {
		opts = &ListOptions{}
	}
	fail := func(err error) ([]*unstructured.Unstructured, error) {
		return nil, fmt.Errorf("k8s: List for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	r, err := c.s.kindNamed(kind)
	if err != nil {
		return fail(err)
	}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return fail(fmt.Errorf("label selector %q: %w", opts.LabelSelector, err))
	}
	ns := opts.Namespace
	if ns == "" {
		ns = c.ev.Key.Namespace
	}
	if !r.namespaced || opts.AllNamespaces {
		ns = ""
	}
	all, err := r.list(ns)
	if err != nil {
		return fail(err)
	}
	var owner string
	if opts.Controlled {
		owner = string(c.ownerUID())
	}
	var out []*unstructured.Unstructured
	for _, u := range all {
		if !sel.Matches(labels.Set(u.GetLabels())) {
			continue
		}
		if opts.Controlled && !controlledBy(u, owner) {
			continue
		}
		out = append(out, u.DeepCopy())
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return out, nil
}

// ownerUID returns the uid of the event's object, as it was or is.
func (c *Client) ownerUID() string {
	for _, o := range []map[string]any{c.ev.New, c.ev.Old} {
		if id := uid(o); id != "" {
			return id
		}
	}
	return ""
}

// controlledBy reports whether u's controller has the uid id.
func controlledBy(u *unstructured.Unstructured, id string) bool {
	if id == "" {
		return false
	}
	for _, r := range u.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller && string(r.UID) == id {
			return true
		}
	}
	return false
}

// list returns the cache's objects of namespace ns ("" for all), which the
// caller must not modify.
func (r *resource) list(ns string) ([]*unstructured.Unstructured, error) {
	var indexers []cache.Indexer
	if r.shared != nil {
		ix, ok := r.shared.(interface{ GetIndexer() cache.Indexer })
		if !ok {
			return nil, fmt.Errorf("the informer of %s that Options.Informers gave cannot list its objects (it has no GetIndexer)", r.gvr.GroupResource())
		}
		indexers = append(indexers, ix.GetIndexer())
	} else if inf, ok := r.informers[ns]; ok && ns != "" {
		indexers = append(indexers, inf.GetIndexer())
	} else if inf, ok := r.informers[""]; ok {
		indexers = append(indexers, inf.GetIndexer())
	} else {
		for _, n := range slices.Sorted(maps.Keys(r.informers)) {
			if ns == "" || n == ns {
				indexers = append(indexers, r.informers[n].GetIndexer())
			}
		}
	}
	var out []*unstructured.Unstructured
	for _, ix := range indexers {
		for _, o := range ix.List() {
			u, ok := o.(*unstructured.Unstructured)
			if ok && (ns == "" || u.GetNamespace() == ns) {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// kindNamed returns the watched resource of kind: its key kind ([KindOf]),
// or its kind alone when exactly one watched resource has that kind.
func (s *Source) kindNamed(kind string) (*resource, error) {
	s.mu.Lock()
	kinds := s.kinds
	s.mu.Unlock()
	return resolveKind(kinds, kind)
}

// resolveKind finds kind in kinds (by key kind), accepting a kind without
// its group when it names one resource alone.
func resolveKind(kinds map[string]*resource, kind string) (*resource, error) {
	if r, ok := kinds[kind]; ok {
		return r, nil
	}
	var short []*resource
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		if kinds[k].kind == kind {
			short = append(short, kinds[k])
		}
	}
	switch len(short) {
	case 1:
		return short[0], nil
	case 0:
		return nil, fmt.Errorf("kind %q is not one the Source watches (kinds: %s): watch it as a Resource (ReadOnly, if no handler runs on it)", kind, strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
	var names []string
	for _, r := range short {
		names = append(names, r.keyKind)
	}
	return nil, fmt.Errorf("kind %q is ambiguous: the Source watches %s; name one", kind, strings.Join(names, " and "))
}
