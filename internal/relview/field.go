package relview

import (
	"slices"

	"github.com/opbus/opbus/internal/pathsyntax"
)

// A Pattern matches a kind, or a name, of related objects: the one in Key,
// or any when Any is set.
type Pattern struct {
	Key string
	Any bool
}

// AnyOne is the pattern that matches every kind, or every name.
var AnyOne = Pattern{Any: true}

// A Field is a related field, related.<kind>.<name>.<rest>, as a pattern
// over the entries of a view: the entries of a kind and name it matches,
// and of those, the part at Rest (the whole related object when Rest is
// empty). P is the owner's type of paths.
type Field[P any] struct {
	Path       P // the field as a handler wrote it
	Kind, Name Pattern
	Rest       P
}

// NewField returns the related field at path, which starts with the
// related field's own key: related.<kind>.<name>.<rest>, kind and name
// each a key or [*] (omitted: [*]), rest any path (empty: the whole
// related object). syntax gives the syntax of a segment of path. It
// reports false when kind or name is neither a key nor [*].
func NewField[P ~[]S, S any](path P, syntax func(S) pathsyntax.Segment) (Field[P], bool) {
	f := Field[P]{Path: path, Kind: AnyOne, Name: AnyOne}
	for i, at := range []*Pattern{&f.Kind, &f.Name} {
		if len(path) <= i+1 {
			break
		}
		switch s := syntax(path[i+1]); s.Kind {
		case pathsyntax.Key:
			*at = Pattern{Key: s.Key}
		case pathsyntax.Any:
		default:
			return f, false
		}
	}
	if len(path) > 3 {
		f.Rest = slices.Clone(path[3:])
	}
	return f, true
}

// Matches reports whether f reads the related object of kind that appears
// in a view as name; names are the other names of kinds (name → kind),
// through which f may name a kind too.
func (f *Field[P]) Matches(kind, name string, names map[string]string) bool {
	return (f.Kind.Any || f.Kind.Key == kind || names[f.Kind.Key] == kind) && (f.Name.Any || f.Name.Key == name)
}

// Fields is the distinct related fields that handlers read, in the order
// they were first added: a field's index is its place in every view's
// sums.
type Fields[P any] []Field[P]

// Add returns the index of f among fs, adding it unless a field with the
// same path is there already; same reports whether two paths are the
// same.
func (fs *Fields[P]) Add(f Field[P], same func(P, P) bool) int {
	for i := range *fs {
		if same((*fs)[i].Path, f.Path) {
			return i
		}
	}
	*fs = append(*fs, f)
	return len(*fs) - 1
}
