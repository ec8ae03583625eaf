package perhandler

// State is what the passes of a key keep of its handlers that only some
// keys need: owed Resume runs and the states failing handlers fell behind
// at. Its zero value, and a nil *State, owe nothing and hold nothing.
type State struct {
	owed   []bool                 // by handler index: a Resume run is owed by this Bus
	behind map[int]map[string]any // handler index → the state it last handled, while it fails
}

// Owe notes a Resume run owed to each of n handlers that wants reports
// wanting Resume, and to no other.
func (s *State) Owe(n int, wants func(i int) bool) {
	s.owed = make([]bool, n)
	for i := range s.owed {
		s.owed[i] = wants(i)
	}
}

// Owes reports whether a Resume run is owed to handler i.
func (s *State) Owes(i int) bool {
	return s != nil && i < len(s.owed) && s.owed[i]
}

// Paid notes that handler i owes no Resume run any more.
func (s *State) Paid(i int) {
	if s != nil && i < len(s.owed) {
		s.owed[i] = false
	}
}

// Behind returns the state handler i last handled before it failed, and
// whether it is failing since (a nil state is one: it had handled none).
func (s *State) Behind(i int) (map[string]any, bool) {
	if s == nil {
		return nil, false
	}
	old, ok := s.behind[i]
	return old, ok
}

// FellBehind notes that handler i failed, having last handled old; a
// handler already behind keeps the state it noted first.
func (s *State) FellBehind(i int, old map[string]any) {
	if s.behind == nil {
		s.behind = map[int]map[string]any{}
	}
	if _, ok := s.behind[i]; !ok {
		s.behind[i] = old
	}
}

// Forget drops what handler i last handled before it failed: it
// succeeded or recovered.
func (s *State) Forget(i int) {
	if s != nil {
		delete(s.behind, i)
	}
}

// Reset forgets everything: the key's incarnation ended or started afresh.
func (s *State) Reset() {
	if s != nil {
		*s = State{}
	}
}
