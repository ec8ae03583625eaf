package writeq

// Slots is a semaphore of N write slots. It is a channel so that its
// zero value is no slots and a caller may select on it; a slot is taken
// by a send and given back by a receive.
//
// Invariant: the number of slots taken is len(s), at most cap(s); every
// Take is matched by exactly one Free.
type Slots chan struct{}

// NewSlots returns n write slots; n must be positive.
func NewSlots(n int) Slots {
	if n <= 0 {
		panic("writeq: NewSlots needs at least one slot")
	}
	return make(Slots, n)
}

// Take takes a slot, waiting while all are taken.
func (s Slots) Take() { s <- struct{}{} }

// Free gives back a slot that Take took.
func (s Slots) Free() { <-s }

// Taken reports how many slots are taken now.
func (s Slots) Taken() int { return len(s) }
