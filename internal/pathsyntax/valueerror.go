package pathsyntax

// ValueError reports a value that is not what was expected where it is:
// at Path (nil for the value itself), with its Value and the Reason. The
// packages that walk JSON-like values (internal/canonical, internal/decode)
// report with it, and the bus turns it into its public ValueError.
type ValueError struct {
	Path   []Segment
	Value  any
	Reason string
}

// Error formats the error as its reason.
func (e *ValueError) Error() string { return e.Reason }

// Clone returns a copy of the path p, nil for the root (no segments), so
// that an error keeps a path its walk goes on changing.
func Clone(p []Segment) []Segment {
	if len(p) == 0 {
		return nil
	}
	return append([]Segment(nil), p...)
}
