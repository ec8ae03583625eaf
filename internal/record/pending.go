package record

import "slices"

// Which observed states a record keeps pending. When a bus stops, or lets
// a key go to another process, the states of the key it has not handled
// are saved in the key's record, oldest first, and the next process
// handles them before anything it observes itself. The rules below choose
// those states; they hold:
//
//   - Every deletion is kept, once per incarnation: a deletion of an
//     incarnation whose deletion is finished (a repeat) is dropped, since
//     the next process could not tell it apart from a first one.
//   - Of a run of states that supersede each other (updates of one
//     incarnation), only the latest is kept, carrying what the others
//     carried (Absorb).
//   - The state of a pass that was abandoned stays whole and first: its
//     handlers that succeeded were not committed, and must see it again
//     before any later state.
//
// The functions know the bus's states of type T only through Rules.

// Rules say how the bus's states of type T read.
type Rules[T any] struct {
	// Deletion reports whether s ends an incarnation, and which one ("":
	// unknown).
	Deletion func(s *T) (deleted bool, inc string)
	// Supersedes reports whether x may be folded into y, the state after
	// it, y then standing for both.
	Supersedes func(x, y T) bool
	// Absorb returns y, which supersedes x, carrying what x carried that
	// y does not.
	Absorb func(x, y T) T
}

// Life is where a key's incarnations stand before the first of the states
// given to [Rules.DropRepeats].
type Life struct {
	Live     bool   // an incarnation is current: observed, not deleted
	Ended    bool   // the last incarnation's deletion is finished, and none began since
	EndedInc string // the incarnation whose deletion is finished; "" if unknown
}

// Fold folds each of states that Supersedes says may go into the next one
// into that one, and returns those kept, in order, in states' own array.
// mark, if not nil, is called on each state kept that absorbed others.
func (r Rules[T]) Fold(states []T, mark func(*T)) []T {
	out := states[:0]
	skipped := false
	for i, x := range states {
		if i+1 < len(states) && r.Supersedes(x, states[i+1]) {
			states[i+1] = r.Absorb(x, states[i+1])
			skipped = true
			continue
		}
		if skipped && mark != nil {
			mark(&x)
		}
		skipped = false
		out = append(out, x)
	}
	return out
}

// Keep returns what of states, oldest first, a record keeps pending: every
// deletion and, of each run of states that supersede each other, the
// latest. With whole, the first state is kept as it is, apart from the
// rest (the state of an abandoned pass). states is left as it is.
func (r Rules[T]) Keep(states []T, whole bool) []T {
	states = slices.Clone(states)
	if whole && len(states) > 1 {
		return append(states[:1], r.Fold(states[1:], nil)...)
	}
	return r.Fold(states, nil)
}

// DropRepeats returns states without the deletions that repeat one that
// is finished, as the incarnations stand at life and then as states
// change them; it reuses no array of states'.
func (r Rules[T]) DropRepeats(states []T, life Life) []T {
	out := states[:0:0]
	for i := range states {
		deleted, inc := r.Deletion(&states[i])
		if !deleted {
			life.Live, life.Ended = true, false
			out = append(out, states[i])
			continue
		}
		if (inc != "" && inc == life.EndedInc) || (inc == "" && life.Ended && !life.Live) {
			continue // a repeat of a finished deletion
		}
		out = append(out, states[i])
		life = Life{Ended: true, EndedInc: inc}
	}
	return out
}

// Replaces reports whether states begin with a state of another
// incarnation than inc, the live one: never if inc is unknown ("").
func (r Rules[T]) Replaces(states []T, inc string) bool {
	if inc == "" || len(states) == 0 {
		return false
	}
	deleted, first := r.Deletion(&states[0])
	return !deleted && first != "" && first != inc
}
