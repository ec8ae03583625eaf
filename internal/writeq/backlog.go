package writeq

// Backlog is what a key owes its next write: whether results are owed
// (merged into the next pass's write, or queued behind the write in
// flight), how many passes since the last write began, and the statuses
// those passes published, in order, for the sink before the next write's
// own. S is a status; same tells two apart.
//
// Invariant: Statuses never holds two consecutive equal statuses (by
// same); Take and Reset leave it owing nothing, with no statuses and no
// passes counted; Passes counts the Pass calls since.
type Backlog[S any] struct {
	owed     bool
	passes   int
	statuses []S
}

// Pass counts one more pass since the last write began, and returns the
// count.
func (b *Backlog[S]) Pass() int {
	b.passes++
	return b.passes
}

// Passes returns the passes counted since the last write began.
func (b *Backlog[S]) Passes() int { return b.passes }

// Over reports whether more than limit passes were counted: the next
// result waits for the write in flight instead of queueing behind it.
func (b *Backlog[S]) Over(limit int) bool { return b.passes > limit }

// Owe notes that a result is owed to the next write.
func (b *Backlog[S]) Owe() { b.owed = true }

// Owed reports whether a result is owed.
func (b *Backlog[S]) Owed() bool { return b.owed }

// Forgive notes that what was owed goes with another write (a finished
// deletion takes the incarnation's record with it), statuses kept.
func (b *Backlog[S]) Forgive() { b.owed = false }

// Note keeps s, the status of a queued result, unless it equals the last
// one kept.
func (b *Backlog[S]) Note(s S, same func(a, b S) bool) {
	if n := len(b.statuses); n > 0 && same(b.statuses[n-1], s) {
		return
	}
	b.statuses = append(b.statuses, s)
}

// Last returns the last status kept, if any.
func (b *Backlog[S]) Last() (s S, ok bool) {
	if n := len(b.statuses); n > 0 {
		return b.statuses[n-1], true
	}
	return s, false
}

// Take returns the statuses kept, for the write that now carries what is
// owed, and leaves b owing nothing, with no passes counted.
func (b *Backlog[S]) Take() []S {
	s := b.statuses
	*b = Backlog[S]{}
	return s
}

// Reset drops what b owes.
func (b *Backlog[S]) Reset() { *b = Backlog[S]{} }
