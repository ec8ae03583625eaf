package k8s

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/opbus/opbus"
)

// Reference names the objects that refer to an object by name: the
// objects of Kind in the object's namespace whose Field, a string field
// holding a name, equals the object's name. See [Resource].Referenced.
type Reference struct {
	// Kind is the referring kind as [KindOf] spells it, such as
	// "Backup.example.com"; a resource of the Source must hold it.
	Kind string
	// Field is the path of the referring field in the bus's grammar, map
	// keys only, such as "spec.target".
	Field string
}

// refIndex names the informer index of the referring field f.
func refIndex(f string) string { return "opbus.dev/ref:" + f }

// reference is a Reference checked against the resources of the Source.
type reference struct {
	from  *resource // the referring resource
	field opbus.Path
	index string
}

// prepareReferences checks each [Resource].Referenced against the
// resources rs, by key kind in kinds, and adds the indexes of the
// referring fields to the referring resources' informers, which are
// built but not started.
func prepareReferences(rs []*resource, kinds map[string]*resource) error {
	for _, r := range rs {
		for _, ref := range r.cfg.Referenced {
			from := kinds[ref.Kind]
			if from == nil {
				return fmt.Errorf("k8s: resource %s: Referenced names kind %q, which no resource of the Source holds (kinds: %s)",
					r.gvr.GroupResource(), ref.Kind, strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
			}
			p, err := opbus.ParsePath(ref.Field)
			if err != nil {
				return fmt.Errorf("k8s: resource %s: Referenced field of %s: %w", r.gvr.GroupResource(), ref.Kind, err)
			}
			if len(p) == 0 || slices.ContainsFunc(p, func(s opbus.Segment) bool { return s.Kind != opbus.SegKey }) {
				return fmt.Errorf("k8s: resource %s: Referenced field %s of %s: want map keys only (such as spec.target), naming a string field that holds a name",
					r.gvr.GroupResource(), ref.Field, ref.Kind)
			}
			if !r.namespaced || !from.namespaced {
				return fmt.Errorf("k8s: resource %s: Referenced by %s: both must be namespaced (a reference names an object in its own namespace)",
					r.gvr.GroupResource(), ref.Kind)
			}
			rf := reference{from: from, field: p, index: refIndex(p.String())}
			idx, err := from.indexables()
			if err != nil {
				return fmt.Errorf("k8s: resource %s: Referenced by %s: %w", r.gvr.GroupResource(), ref.Kind, err)
			}
			for _, inf := range idx {
				if _, exists := inf.GetIndexer().GetIndexers()[rf.index]; exists {
					continue
				}
				if err := inf.AddIndexers(cache.Indexers{rf.index: func(obj any) ([]string, error) {
					u, ok := obj.(*unstructured.Unstructured)
					if !ok {
						return nil, nil
					}
					if v := refValue(u.Object, p); v != "" {
						return []string{u.GetNamespace() + "/" + v}, nil
					}
					return nil, nil
				}}); err != nil {
					return fmt.Errorf("k8s: indexing %s by %s: %w", ref.Kind, ref.Field, err)
				}
			}
			r.refs = append(r.refs, rf)
			from.referred = append(from.referred, referred{to: r, field: p})
		}
	}
	return nil
}

// referred is a resource whose objects the objects of another refer to.
type referred struct {
	to    *resource
	field opbus.Path
}

// refValue returns the string at path p of obj, "" if there is none.
func refValue(obj map[string]any, p opbus.Path) string {
	var v any = obj
	for _, s := range p {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[s.Key]
	}
	str, _ := v.(string)
	return str
}

// referrersOf returns the keys of the objects that refer to obj, the state
// of key, by a [Resource].Referenced of its resource. It is part of the
// bus's [opbus.Options].Related.
func (s *Source) referrersOf(key opbus.Key, _ map[string]any) []opbus.Key {
	s.mu.Lock()
	kinds := s.kinds // set once by Run, never changed after
	s.mu.Unlock()
	r := kinds[key.Kind]
	if r == nil {
		return nil
	}
	var out []opbus.Key
	for _, ref := range r.refs {
		var inf indexable
		if i, ok := ref.from.shared.(indexable); ok {
			inf = i
		} else if i := ref.from.informers[key.Namespace]; i != nil {
			inf = i
		} else if i := ref.from.informers[""]; i != nil {
			inf = i
		}
		if inf == nil {
			continue
		}
		objs, err := inf.GetIndexer().ByIndex(ref.index, key.Namespace+"/"+key.Name)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok {
				out = append(out, ref.from.key(u))
			}
		}
	}
	return out
}

// reRelate gives the bus again the objects that an object of r referred
// to before its change (old) or refers to after it (u), when the two
// differ: their relations, which the bus computes when it observes them,
// changed. A nil old is a new object, a nil u a deleted one.
func (w *watch) reRelate(r *resource, old, u *unstructured.Unstructured) {
	for _, ref := range r.referred {
		var was, is string
		if old != nil {
			was = refValue(old.Object, ref.field)
		}
		if u != nil {
			is = refValue(u.Object, ref.field)
		}
		if was == is {
			continue
		}
		ns := ""
		if u != nil {
			ns = u.GetNamespace()
		} else {
			ns = old.GetNamespace()
		}
		for _, name := range []string{was, is} {
			if name == "" {
				continue
			}
			key := opbus.Key{Kind: ref.to.keyKind, Namespace: ns, Name: name}
			if obj, ok := ref.to.cached(key); ok && (ref.to.readOnly || w.claimed(ref.to, obj.Object)) {
				// Under Shards, another replica may handle it.
				w.relate(w.bus.Observe(w.ctx, key, obj.Object), key)
			}
		}
	}
}

// indexable is what a referring kind's informer needs to index the
// field that refers: client-go's SharedIndexInformer has it, and so may
// an informer of [Options].Informers.
type indexable interface {
	AddIndexers(cache.Indexers) error
	GetIndexer() cache.Indexer
}

// indexables returns r's informers that index fields for
// Resource.Referenced, or an error when r's informer comes from
// Options.Informers and cannot be indexed: its referrers could never be
// found, and relations would be silently missing.
func (r *resource) indexables() ([]indexable, error) {
	if r.shared != nil {
		if i, ok := r.shared.(indexable); ok {
			return []indexable{i}, nil
		}
		return nil, fmt.Errorf("the informer of %s that Options.Informers gives (%T) has no indexer (AddIndexers and GetIndexer), which a referring kind's informer needs; "+
			"a controller-runtime cache of several namespaces gives such informers", r.gvr.GroupResource(), r.shared)
	}
	out := make([]indexable, 0, len(r.informers))
	for _, inf := range r.informers {
		out = append(out, inf)
	}
	return out, nil
}
