package writeq

import "sync"

// Owner is the caller's side of a Loop: its lock, the handler slot its
// loop may hold, and what a joined write's outcome does to its state.
type Owner[J comparable] interface {
	// Lock and Unlock are the caller's lock, under which a Cycle reads
	// whether its write in flight returned (Flight.Finished).
	sync.Locker
	// FreeHandler gives back the handler slot the loop holds, if it
	// does; the lock is held.
	FreeHandler()
	// TakeIn takes in the outcome of job, a write of the key that the
	// loop joined; the lock is not held.
	TakeIn(job J)
}

// Loop is what the loop that holds a key keeps of the key's writes: the
// key's write Cycle, and whether the loop holds a write slot. Its methods
// keep the order of the key's writes for the loop: the loop makes a write
// itself (ToWrite) only once the write in flight was joined and its
// outcome taken in (JoinIn), and it gives back its handler slot before it
// waits for that write (JoinFree), so that no handler slot waits on the
// store. The zero Loop holds nothing.
//
// Invariant: the loop holds at most one write slot, taken by ToWrite and
// given back by Leave; a write the loop makes follows every write of the
// key put in flight before it (invariant 1).
type Loop[J comparable, S any] struct {
	Cycle[J, S]
	writing bool
}

// JoinIn waits for the write in flight, if any, and has o take its
// outcome in, before the key writes again.
func (l *Loop[J, S]) JoinIn(o Owner[J]) {
	if job, ok := l.Join(); ok {
		o.TakeIn(job)
	}
}

// JoinFree joins the write in flight, if any (JoinIn), having given back
// the loop's handler slot: the write before goes first, and no handler
// slot waits for it.
func (l *Loop[J, S]) JoinFree(o Owner[J]) {
	if !l.InFlight() {
		return
	}
	o.Lock()
	o.FreeHandler()
	o.Unlock()
	l.JoinIn(o)
}

// ToWrite readies the loop to make a write itself: it joins the write in
// flight (JoinFree), then, unless the loop holds a write slot already,
// moves it from its handler slot to one of slots, waiting while all are
// taken.
func (l *Loop[J, S]) ToWrite(o Owner[J], slots Slots) {
	l.JoinFree(o)
	if l.writing {
		return
	}
	o.Lock()
	o.FreeHandler()
	o.Unlock()
	slots.Take()
	l.writing = true
}

// Leave gives back to slots the write slot the loop holds, if it does;
// the caller's lock is held.
func (l *Loop[J, S]) Leave(slots Slots) {
	if l.writing {
		l.writing = false
		slots.Free()
	}
}
