package writeq

import (
	"context"
	"sync"
)

// Writer is the caller's side of Out: it makes a write, and takes in the
// outcome of one whose key Out claimed.
type Writer[J comparable, S any] interface {
	// Make makes job; Out holds a write slot for it.
	Make(ctx context.Context, job J)
	// Claimed takes in the outcome of job, whose key Out claimed with
	// owed, the backlog of the write after it. It either returns that
	// write, parked in turn (Parking.Next, under the caller's lock), with
	// its Flight and ok set, or lets the key go and returns ok false.
	Claimed(ctx context.Context, job J, owed Backlog[S]) (next J, f *Flight, ok bool)
}

// Out is the goroutine of a write made beside its key's next results:
// the write's side of the hand-off of invariant 5. It makes job, in
// flight with f, in one of slots (w.Make), then, under lock, marks f
// finished and claims key if it is still parked on job, and closes f. If
// a loop holds the key, that loop joins job and Out returns. Otherwise
// Out holds the key: w.Claimed takes the outcome of job in with the
// backlog the key owes, and either returns the write to make next, which
// it parked with Next under lock, or lets the key go; Out makes the next
// write in turn.
//
// lock is the caller's, under which it parks, takes over and checks
// Finished; p's calls are made under it.
func (p *Parking[K, J, S]) Out(ctx context.Context, lock sync.Locker, slots Slots, key K, job J, f *Flight, w Writer[J, S]) {
	for {
		slots.Take()
		w.Make(ctx, job)
		slots.Free()
		lock.Lock()
		f.MarkFinished()
		owed, mine := p.Claim(key, job)
		lock.Unlock()
		f.Close()
		if !mine {
			return // a loop holds the key: it joins job
		}
		var ok bool
		if job, f, ok = w.Claimed(ctx, job, owed); !ok {
			return
		}
	}
}
