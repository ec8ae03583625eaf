package opbus

import (
	"github.com/opbus/opbus/internal/canonical"
	"github.com/opbus/opbus/internal/pathsyntax"
)

// The door (Observe, Dispatch and their update and delete forms) takes
// documents in the form decoders produce: map[string]any, []any, string,
// bool, nil and numbers as int, int64, float64 or json.Number. Documents
// built by hand often hold Go values whose JSON form is just as plain — a
// labels map[string]string, a []string of tags, a named string type for a
// phase, an int32 — and the door converts those rather than reject them:
// integers to int64 (uint64 past its range), floats to float64. A value
// whose JSON form depends on more than its Go kind (a struct, whose form
// follows its field tags; a type with its own MarshalJSON or MarshalText;
// []byte, which encoding/json writes in base64) is rejected, and the error
// says to convert it with [Document].

// canonicalDocument returns obj in the bus's canonical form, for a
// document that the door's quick check did not pass: see
// [canonical.Document]. An error is a *ValueError.
func canonicalDocument(obj map[string]any) (map[string]any, error) {
	out, err := canonical.Document(obj)
	if err != nil {
		return nil, valueError(err)
	}
	return out, nil
}

// valueError returns a *canonical.Error as the *ValueError it stands for, and
// any other error as it is.
func valueError(err error) error {
	e, ok := err.(*canonical.Error)
	if !ok {
		return err
	}
	return &ValueError{Path: pathOf(e.Path), Value: e.Value, Reason: e.Reason}
}

// pathOf returns the segments p of the path syntax as a Path, nil for none.
func pathOf(p []pathsyntax.Segment) Path {
	if len(p) == 0 {
		return nil
	}
	out := make(Path, len(p))
	for i, s := range p {
		out[i] = fromSyntax(s)
	}
	return out
}
