package opbus

import (
	"errors"
	"fmt"
	"slices"
)

// IgnoreKind adds path patterns that no diff or digest of an object of
// kind sees, besides those the bus ignores for every kind ([Bus.Ignore],
// [Options].Ignore): the paths an adapter writes on some kinds only, such
// as the conditions it writes on custom resources, which on another kind
// (a Pod's Ready) belong to someone else. The patterns are checked as
// Ignore checks its own, and count with them towards the limit of one
// comparer. It must be called before the bus starts. See rule 34b of
// docs/semantics.md.
func (b *Bus) IgnoreKind(kind string, paths ...string) error {
	if kind == "" {
		return errors.New("opbus: IgnoreKind: empty kind: expected the kind of the keys whose paths to ignore")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.frozen {
		return fmt.Errorf("opbus: IgnoreKind(%q, %v): the bus has started; declare ignored paths before Run, Observe or Dispatch", kind, paths)
	}
	ignore := addNew(slices.Clone(b.reg.kindIgnore[kind]), paths...)
	cmp, err := NewComparer(&CompareOptions{Ignore: addNew(slices.Clone(b.reg.ignore), ignore...), ListKeys: b.cfg.listKeys})
	if err != nil {
		return within(err, "opbus: IgnoreKind(%q)", kind)
	}
	if b.reg.kindIgnore == nil {
		b.reg.kindIgnore, b.reg.kindCmp = map[string][]string{}, map[string]*Comparer{}
	}
	b.reg.kindIgnore[kind], b.reg.kindCmp[kind] = ignore, cmp
	return b.handlersWritesComparers()
}

// handlersWritesComparers rebuilds the comparers of the handlers with
// Writes after the ignored paths changed; b.mu is held.
func (b *Bus) handlersWritesComparers() error {
	for _, h := range b.reg.handlers {
		if len(h.writes) > 0 {
			if err := b.writesComparers(h); err != nil {
				return within(err, "opbus: handler %q: Writes", h.id)
			}
		}
	}
	return nil
}

// cmpFor returns the comparer for objects of kind: the bus's, with the
// paths IgnoreKind gave for kind. Comparers change only before the bus
// starts.
func (b *Bus) cmpFor(kind string) *Comparer {
	if c := b.reg.kindCmp[kind]; c != nil {
		return c
	}
	return b.reg.cmp
}

// setIgnore makes ignore the paths ignored on every kind, and rebuilds
// the comparers; b.mu is held (or b is being built).
func (b *Bus) setIgnore(ignore []string) error {
	cmp, err := NewComparer(&CompareOptions{Ignore: ignore, ListKeys: b.cfg.listKeys})
	if err != nil {
		return err
	}
	kinds := make(map[string]*Comparer, len(b.reg.kindIgnore))
	for kind, paths := range b.reg.kindIgnore {
		c, err := NewComparer(&CompareOptions{Ignore: addNew(slices.Clone(ignore), paths...), ListKeys: b.cfg.listKeys})
		if err != nil {
			return within(err, "opbus: with the paths ignored on kind %q", kind)
		}
		kinds[kind] = c
	}
	b.reg.ignore, b.reg.cmp = ignore, cmp
	if len(kinds) > 0 {
		b.reg.kindCmp = kinds
	}
	return b.handlersWritesComparers()
}
