package opbus

import "github.com/opbus/opbus/internal/decode"

// lookup returns the value at the concrete path p in v and whether it
// exists. A [SegMatch] segment finds the list element whose field has that
// value; [SegAny] is not concrete and finds nothing (see [eachMatch]).
func lookup(v any, p Path) (any, bool) {
	for _, s := range p {
		var ok bool
		if v, ok = decode.Step(v, s.syntax()); !ok {
			return nil, false
		}
	}
	return v, true
}

// eachMatch calls fn for every concrete path in v that the pattern p matches,
// with the value there, in document order (map keys unordered). Matched
// [SegMatch] segments stay in the concrete path as they are; [SegAny] becomes
// an index or a key. The path passed to fn is only valid during the call.
func eachMatch(v any, p Path, fn func(at Path, val any)) {
	resolve(v, p, make(Path, 0, len(p)), fn)
}

func resolve(v any, rest, at Path, fn func(Path, any)) {
	if len(rest) == 0 {
		fn(at, v)
		return
	}
	s := rest[0]
	if s.Kind != SegAny {
		if e, ok := decode.Step(v, s.syntax()); ok {
			resolve(e, rest[1:], append(at, s), fn)
		}
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			resolve(e, rest[1:], append(at, MapKey(k)), fn)
		}
	case []any:
		for i, e := range x {
			resolve(e, rest[1:], append(at, ListIndex(i)), fn)
		}
	}
}
