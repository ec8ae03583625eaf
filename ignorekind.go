package opbus

import (
	"errors"
	"fmt"

	"github.com/opbus/opbus/internal/ignored"
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
	ignore := b.reg.ignore.WithKind(kind, paths...)
	cmp, _, err := ignored.Build(ignore, nil, b.newComparer)
	if err != nil {
		return within(err, "opbus: IgnoreKind(%q)", kind)
	}
	b.reg.ignore, b.reg.cmp = ignore, cmp
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
func (b *Bus) cmpFor(kind string) *Comparer { return b.reg.cmp.For(kind) }

// setIgnore makes every the paths ignored on every kind, and rebuilds
// the comparers; b.mu is held (or b is being built).
func (b *Bus) setIgnore(every []string) error {
	ignore := ignored.Set{Every: every, Kinds: b.reg.ignore.Kinds}
	cmp, err := b.comparers(ignore, nil)
	if err != nil {
		return err
	}
	b.reg.ignore, b.reg.cmp = ignore, cmp
	return b.handlersWritesComparers()
}

// comparers builds the comparers of ignore with extra ignored besides (a
// handler's writes), naming the kind of one that fails to build.
func (b *Bus) comparers(ignore ignored.Set, extra []string) (ignored.Comparers[*Comparer], error) {
	cmp, kind, err := ignored.Build(ignore, extra, b.newComparer)
	if err != nil && kind != "" {
		return cmp, within(err, "opbus: with the paths ignored on kind %q", kind)
	}
	return cmp, err
}

// newComparer returns a comparer that ignores the patterns ignore, with
// the bus's list keys.
func (b *Bus) newComparer(ignore []string) (*Comparer, error) {
	return NewComparer(&CompareOptions{Ignore: ignore, ListKeys: b.cfg.listKeys})
}
