// Package ignored keeps the path patterns a bus ignores and builds the
// comparers that ignore them: one for every kind, and one for each kind
// given patterns of its own (Bus.IgnoreKind), with the paths a handler
// writes (On.Writes) besides when it has some.
//
// Invariant: a comparer of [Comparers] ignores exactly the patterns it was
// built from, each once, in this order: those of every kind, then its
// kind's, then the extra ones; and Comparers holds one comparer for each
// kind of the [Set] it was built from, for no other kind. Patterns only
// grow, before the bus starts, and the comparers are built again each time
// they do: none is left built from patterns that have changed since.
package ignored

import (
	"maps"
	"slices"
)

// Set is the path patterns a bus ignores: Every on objects of every kind,
// and Kinds[kind] on objects of kind besides.
type Set struct {
	Every []string
	Kinds map[string][]string
}

// WithKind returns s with patterns added to those of kind; s is not
// modified.
func (s Set) WithKind(kind string, patterns ...string) Set {
	s.Kinds = maps.Clone(s.Kinds)
	if s.Kinds == nil {
		s.Kinds = map[string][]string{}
	}
	s.Kinds[kind] = AddNew(slices.Clone(s.Kinds[kind]), patterns...)
	return s
}

// Comparers are the comparers built from a [Set]: Every for objects of a
// kind without patterns of its own, and one in Kinds for each kind with.
type Comparers[C any] struct {
	Every C
	Kinds map[string]C
}

// For returns the comparer for objects of kind.
func (c *Comparers[C]) For(kind string) C {
	if k, ok := c.Kinds[kind]; ok {
		return k
	}
	return c.Every
}

// Build returns the comparers of s with the patterns extra ignored
// besides, each made by build from its patterns; kinds are built in name
// order. When one fails to build, Build returns its error and the kind
// whose comparer it is, or "" for Every.
func Build[C any](s Set, extra []string, build func(patterns []string) (C, error)) (c Comparers[C], kind string, err error) {
	if c.Every, err = build(AddNew(slices.Clone(s.Every), extra...)); err != nil {
		return c, "", err
	}
	for _, kind := range slices.Sorted(maps.Keys(s.Kinds)) {
		k, err := build(AddNew(AddNew(slices.Clone(s.Every), s.Kinds[kind]...), extra...))
		if err != nil {
			return c, kind, err
		}
		if c.Kinds == nil {
			c.Kinds = map[string]C{}
		}
		c.Kinds[kind] = k
	}
	return c, "", nil
}

// AddNew appends to list the patterns it does not hold yet, in order.
func AddNew(list []string, patterns ...string) []string {
	for _, p := range patterns {
		if !slices.Contains(list, p) {
			list = append(list, p)
		}
	}
	return list
}
