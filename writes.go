package opbus

import "fmt"

// setWrites validates the paths a handler writes in its own object
// (On.Writes) and gives h a comparer that ignores them besides what the
// bus ignores, for its digests and Changes.
func (b *Bus) setWrites(h *handler, writes []string) error {
	if len(writes) == 0 {
		return nil
	}
	for _, w := range writes {
		p, err := ParsePath(w)
		if err != nil {
			return within(err, "opbus: handler %q: Writes", h.id)
		}
		if j, err := b.relatedField(h.id, p); err != nil || j >= 0 {
			if err != nil {
				return err
			}
			return fmt.Errorf("opbus: handler %q: Writes path %s names a related object's field: a handler declares only what it writes in its own object", h.id, w)
		}
		h.writes = append(h.writes, p)
	}
	b.mu.Lock()
	err := b.writesComparers(h)
	b.mu.Unlock()
	if err != nil {
		return within(err, "opbus: handler %q: Writes", h.id)
	}
	for _, f := range h.plain {
		if h.wcmp.Every.ignoresAll(f) {
			return fmt.Errorf("opbus: handler %q: Writes %v covers field %s whole, so its own writes are all it could see there and it would never run on it: narrow Writes or drop the field", h.id, writes, f)
		}
	}
	return nil
}

// writesComparers gives h, a handler with Writes, its comparers: what the
// bus ignores on every kind, and on each kind given to IgnoreKind, with
// the paths h writes besides; b.mu is held. Ignore and IgnoreKind call it
// again for each such handler.
func (b *Bus) writesComparers(h *handler) error {
	writes := make([]string, len(h.writes))
	for i, w := range h.writes {
		writes[i] = w.String()
	}
	cmp, err := b.comparers(b.reg.ignore, writes)
	if err != nil {
		return err
	}
	h.wcmp = &cmp
	return nil
}

// cmpOf returns the comparer of h's digests and Changes on an object of
// kind: the bus's for kind, less the paths h writes itself.
func (b *Bus) cmpOf(h *handler, kind string) *Comparer {
	if h.wcmp == nil {
		return b.cmpFor(kind)
	}
	return h.wcmp.For(kind)
}
