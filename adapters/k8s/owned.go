package k8s

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
)

// controllerOf returns the key of the controller of obj, the state of key,
// when key's resource is [Resource].Owned: the owner that
// metadata.ownerReferences names with controller: true. It is the bus's
// [opbus.Options].Related; before Run has discovered the resources it
// knows none.
func (s *Source) controllerOf(key opbus.Key, obj map[string]any) []opbus.Key {
	s.mu.Lock()
	kinds := s.kinds // set once by Run, never changed after
	s.mu.Unlock()
	r := kinds[key.Kind]
	if r == nil || !r.cfg.Owned {
		return nil
	}
	md, _ := obj["metadata"].(map[string]any)
	refs, _ := md["ownerReferences"].([]any)
	for _, x := range refs {
		ref, _ := x.(map[string]any)
		if c, _ := ref["controller"].(bool); !c {
			continue
		}
		apiVersion, _ := ref["apiVersion"].(string)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil || kind == "" || name == "" {
			continue
		}
		owner := opbus.Key{Kind: KindOf(schema.GroupKind{Group: gv.Group, Kind: kind}), Namespace: key.Namespace, Name: name}
		if o := kinds[owner.Kind]; o != nil && !o.namespaced {
			owner.Namespace = ""
		}
		return []opbus.Key{owner}
	}
	return nil
}
