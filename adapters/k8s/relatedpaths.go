package k8s

import (
	"fmt"
	"slices"

	"github.com/opbus/opbus"
)

// checkRelated returns why the handler sub's field f, a path under
// [opbus.RelatedField] (related.<Kind>.<name>.<field>), can never hold a
// value, or "": its kind must be a watched resource that relates to other
// objects ([Resource].Owned or Referenced, or any kind when the bus was
// given a Related function of its own), named as [KindOf] spells it; and
// the rest of the path must be one an object of that kind can have by
// its schema (unchecked where the schema is not known). kinds holds the
// resources by key kind.
func (s *Source) checkRelated(f opbus.Path, kinds map[string]*resource, schemas map[*resource]*kindSchema) string {
	if len(f) < 2 || f[1].Kind != opbus.SegKey {
		return "" // related[*]: any kind; the bus checked the form
	}
	r := kinds[f[1].Key]
	if r == nil {
		rs := make([]*resource, 0, len(kinds))
		for _, k := range kinds {
			rs = append(rs, k)
		}
		slices.SortFunc(rs, func(a, b *resource) int { return cmpStrings(a.keyKind, b.keyKind) })
		hint := ""
		if m := meant(f[1].Key, rs); m != "" {
			fixed := append(opbus.Path{f[0], opbus.MapKey(m)}, f[2:]...)
			hint = fmt.Sprintf(": did you mean %s?", fixed)
		}
		return fmt.Sprintf("names the related kind %q, which no watched resource holds, so it would never change%s (a kind outside the core group is qualified with its group, as KindOf writes it)", f[1].Key, hint)
	}
	s.mu.Lock()
	userRelated := s.userRelated
	s.mu.Unlock()
	if !r.cfg.Owned && len(r.cfg.Referenced) == 0 && !userRelated {
		return fmt.Sprintf("names the related kind %s, whose objects relate to none (its Resource is neither Owned nor Referenced, and the bus has no Related function), so it would never change", r.keyKind)
	}
	if len(f) < 4 {
		return ""
	}
	ks, ok := schemas[r]
	if !ok {
		return ""
	}
	if ferr := ks.doc.check(ks.root, f[3:]); ferr != nil {
		return fmt.Sprintf("no %s can have (by the API server's schema of %s in %s): %s", r.keyKind, r.gvr.Resource, r.gvr.GroupVersion(), ferr.reason)
	}
	return ""
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
