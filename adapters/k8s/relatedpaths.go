package k8s

import (
	"fmt"
	"slices"
	"strings"

	"github.com/opbus/opbus"
)

// checkRelated returns why the handler sub's field f, a path under
// [opbus.RelatedField] (related.<Kind>.<name>.<field>), can never hold a
// value, or "": its kind must be a watched resource that relates to other
// objects ([Resource].Owned or Referenced, or any kind when the bus was
// given a Related function of its own), named as [KindOf] spells it or by
// its kind alone where one related resource has it (see relatedNames); and
// the rest of the path must be one an object of that kind can have by
// its schema (unchecked where the schema is not known). kinds holds the
// resources by key kind.
func (s *Source) checkRelated(f opbus.Path, kinds map[string]*resource, schemas map[*resource]*kindSchema) string {
	if len(f) < 2 || f[1].Kind != opbus.SegKey {
		return "" // related[*]: any kind; the bus checked the form
	}
	r := kinds[f[1].Key]
	if r == nil {
		// A kind without its group (relatedNames registered it when one
		// related resource has it; one other resource is told apart below).
		all := byKindAlone(kinds, f[1].Key)
		if rel := s.relating(all); len(rel) == 1 {
			r = rel[0]
		} else if len(rel) == 0 && len(all) == 1 {
			r = all[0]
		}
	}
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
		return fmt.Sprintf("names the related kind %q, which no watched resource holds, so it would never change%s (a kind outside the core group is qualified with its group, as KindOf writes it, or named alone where one related resource has it)", f[1].Key, hint)
	}
	if len(s.relating([]*resource{r})) == 0 {
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

// relatedNames lets handlers name a related kind by its kind alone, as
// related.Job[*].status.active for Job.batch, when one resource of that
// kind relates to other objects (Owned, Referenced, or any with a Related
// function of the user's): the bus matches the name to that kind and
// shows the related objects under it too ([opbus.Bus.RelatedName]). A
// kind alone that several related resources have is refused, naming
// them; one that none has is left to checkRelated, which says why.
func (s *Source) relatedNames(bus *opbus.Bus, subs []opbus.Subscription, kinds map[string]*resource) error {
	for _, sub := range subs {
		for _, f := range sub.Fields {
			if len(f) < 2 || f[0] != opbus.MapKey(opbus.RelatedField) || f[1].Kind != opbus.SegKey || kinds[f[1].Key] != nil {
				continue
			}
			if full, fixed := dottedKind(f, kinds); full != "" {
				return fmt.Errorf("k8s: handler %q subscribes to %s, which splits the related kind %s at its dots (a kind with a group is written in brackets and quotes): did you mean %s?",
					sub.ID, f, full, fixed)
			}
			rel := s.relating(byKindAlone(kinds, f[1].Key))
			switch len(rel) {
			case 0:
				continue
			case 1:
				if err := bus.RelatedName(f[1].Key, rel[0].keyKind); err != nil {
					return fmt.Errorf("k8s: handler %q subscribes to %s: %w", sub.ID, f, err)
				}
				continue
			}
			names := make([]string, len(rel))
			for i, r := range rel {
				names[i] = r.keyKind
			}
			fixed := append(opbus.Path{f[0], opbus.MapKey(names[0])}, f[2:]...)
			return fmt.Errorf("k8s: handler %q subscribes to %s, whose related kind %q is ambiguous: %s all relate to other objects; name one with its group, such as %s",
				sub.ID, f, f[1].Key, strings.Join(names, " and "), fixed)
		}
	}
	return nil
}

// dottedKind returns the related kind that f, a path under
// [opbus.RelatedField], spells unquoted across its dots, and the path
// meant, or "": related.Job.batch[*].status.active and
// related.Job.batch.status.active spell Job.batch, meant as
// related["Job.batch"][*].status.active. Without this, the first would
// name the related kind Job and the second the Job named "batch". The
// longest kind spelt wins (Job.short.test.opbus.dev over a Job.short).
func dottedKind(f opbus.Path, kinds map[string]*resource) (string, opbus.Path) {
	full, used := "", 0
	name := f[1].Key
	for i := 2; i < len(f) && f[i].Kind == opbus.SegKey; i++ {
		name += "." + f[i].Key
		if kinds[name] != nil {
			full, used = name, i+1
		}
	}
	if full == "" {
		return "", nil
	}
	fixed := opbus.Path{f[0], opbus.MapKey(full)}
	if used == len(f) || f[used].Kind != opbus.SegAny {
		fixed = append(fixed, opbus.Segment{Kind: opbus.SegAny})
	}
	return full, append(fixed, f[used:]...)
}

// byKindAlone returns the resources of kinds whose objects' kind,
// without the group, is kind, sorted by key kind.
func byKindAlone(kinds map[string]*resource, kind string) []*resource {
	var out []*resource
	for _, r := range kinds {
		if r.kind == kind {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *resource) int { return cmpStrings(a.keyKind, b.keyKind) })
	return out
}

// relating returns those of rs whose objects relate to other objects:
// Owned or Referenced resources, or any when the bus has a Related
// function of the user's.
func (s *Source) relating(rs []*resource) []*resource {
	s.mu.Lock()
	userRelated := s.userRelated
	s.mu.Unlock()
	var out []*resource
	for _, r := range rs {
		if r.cfg.Owned || len(r.cfg.Referenced) > 0 || userRelated {
			out = append(out, r)
		}
	}
	return out
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
