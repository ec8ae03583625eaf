package relview

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Decl is what is declared of relations, keyed by K: the function of each
// related kind, which says what an object of that kind relates to, one
// function for every kind without its own, and other names of related
// kinds. It is filled before its owner starts and only read after, so it
// needs no lock from then on. The zero value declares nothing.
type Decl[K comparable] struct {
	fns   map[string]func(K, map[string]any) []K // by kind
	any   func(K, map[string]any) []K            // for every other kind; nil for none
	names map[string]string                      // another name of a kind → the kind
}

// Declare makes fn the function of kind, and reports whether kind had none
// before; if it had one, nothing changes.
func (d *Decl[K]) Declare(kind string, fn func(K, map[string]any) []K) bool {
	if _, dup := d.fns[kind]; dup {
		return false
	}
	if d.fns == nil {
		d.fns = map[string]func(K, map[string]any) []K{}
	}
	d.fns[kind] = fn
	return true
}

// DeclareAny makes fn the function of every kind that has none of its
// own.
func (d *Decl[K]) DeclareAny(fn func(K, map[string]any) []K) { d.any = fn }

// Func returns the function of kind: its own, or the one for every kind;
// nil for none.
func (d *Decl[K]) Func(kind string) func(K, map[string]any) []K {
	if fn := d.fns[kind]; fn != nil {
		return fn
	}
	return d.any
}

// Declared reports whether objects of kind relate to others: kind has a
// function, its own or the one for every kind.
func (d *Decl[K]) Declared(kind string) bool { return d.Func(kind) != nil }

// Knows reports whether a related field may name kind, directly or by
// another name: objects of every kind relate, or the kind it names has a
// function of its own.
func (d *Decl[K]) Knows(kind string) bool {
	if d.any != nil {
		return true
	}
	if k, ok := d.names[kind]; ok {
		kind = k
	}
	_, ok := d.fns[kind]
	return ok
}

// Kinds returns the kinds with a function of their own, sorted.
func (d *Decl[K]) Kinds() []string { return slices.Sorted(maps.Keys(d.fns)) }

// Name gives kind the other name name, unless name is another kind's
// already, and returns the kind that has name afterwards: kind, or the
// other kind.
func (d *Decl[K]) Name(name, kind string) string {
	if other := d.names[name]; other != "" {
		return other
	}
	if d.names == nil {
		d.names = map[string]string{}
	}
	d.names[name] = kind
	return kind
}

// Rename gives kind the other name name, as Name does, or reports why it
// cannot: name or kind is empty, they are the same, or name is another
// kind's already.
func (d *Decl[K]) Rename(name, kind string) error {
	if name == "" || kind == "" || name == kind {
		return errors.New("expected a name and another kind")
	}
	if other := d.Name(name, kind); other != kind {
		return fmt.Errorf("the name is kind %q's already", other)
	}
	return nil
}

// Names returns the other names of kinds: name → kind. The caller must
// not change it.
func (d *Decl[K]) Names() map[string]string { return d.names }

// Panic is the panic of a relation function, as an error.
type Panic struct {
	Value any // what the function panicked with
}

// Error reports the value the function panicked with.
func (p *Panic) Error() string { return fmt.Sprintf("relation function panicked: %v", p.Value) }

// Targets returns the objects that fn says k relates to, given k's state
// doc: in fn's order, without k itself and without repeats. valid checks
// each; the first error is returned, with no objects. A panic of fn is
// returned as a *Panic.
func Targets[K comparable](fn func(K, map[string]any) []K, k K, doc map[string]any, valid func(K) error) (to []K, err error) {
	defer func() {
		if v := recover(); v != nil {
			to, err = nil, &Panic{Value: v}
		}
	}()
	for _, t := range fn(k, doc) {
		if err := valid(t); err != nil {
			return nil, err
		}
		if t != k && !slices.Contains(to, t) {
			to = append(to, t)
		}
	}
	return to, nil
}
