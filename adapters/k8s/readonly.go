package k8s

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
)

// markReadOnly works out which resources are read-only: on a bus with
// handlers, those no handler runs on (none lists the kind in On.Kinds,
// and none has no Kinds), watched only for the objects they relate to
// (rule 34a of docs/semantics.md), and those
// [Resource].ReadOnly asks for, which must be among them. The adapter
// never writes to a read-only object, so get, list and watch are all the
// RBAC it needs on the resource.
func (s *Source) markReadOnly(subs []opbus.Subscription, rs []*resource) error {
	var ro []string
	for _, r := range rs {
		var runs []string
		for _, sub := range subs {
			if len(sub.Kinds) == 0 || slices.Contains(sub.Kinds, r.keyKind) {
				runs = append(runs, sub.ID)
			}
		}
		if r.cfg.ReadOnly && len(runs) > 0 {
			return fmt.Errorf("k8s: resource %s is ReadOnly, but handler %q runs on its kind %s (it lists the kind in On.Kinds, or lists no Kinds): "+
				"the adapter writes the record and statuses of each object a handler runs on; restrict the handler's Kinds, or drop ReadOnly",
				r.gvr.GroupResource(), runs[0], r.keyKind)
		}
		// A bus without handlers commits every object (its collectors).
		r.readOnly = r.cfg.ReadOnly || len(subs) > 0 && len(runs) == 0
		if r.readOnly {
			ro = append(ro, r.gvr.GroupResource().String())
		}
	}
	if len(ro) > 0 {
		s.log.Info("k8s: read-only resources: no handler runs on them, the adapter only watches them for the objects they relate to and writes nothing to them",
			"resources", ro)
	}
	return nil
}

// observeReadOnly hands the bus a new state of an object of a read-only
// resource as it is: nothing is claimed, restored or released.
func (w *watch) observeReadOnly(r *resource, old, u *unstructured.Unstructured) {
	key := r.key(u)
	if old == nil {
		w.observe(w.bus.Observe(w.ctx, key, u.Object), key)
		return
	}
	if old.GetResourceVersion() == u.GetResourceVersion() {
		return // a resync
	}
	w.observe(w.bus.ObserveUpdate(w.ctx, key, old.Object, u.Object), key)
}
