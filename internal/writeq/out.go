package writeq

import "sync"

// Out is the goroutine of a write made beside its key's next results:
// the write's side of the hand-off of invariant 5. It makes job, in
// flight with f, in one of slots (write makes it), then, under lock,
// marks f finished and claims key if it is still parked on job, and
// closes f. If a loop holds the key, that loop joins job and Out returns.
// Otherwise Out holds the key: claimed takes the outcome of job in with
// the backlog the key owes, and either returns the write to make next,
// which it parked with Next under lock, with ok set, or lets the key go
// and returns ok false; Out makes the next write in turn.
//
// lock is the caller's, under which it parks, takes over and checks
// Finished; p's calls are made under it.
func (p *Parking[K, J, S]) Out(lock sync.Locker, slots Slots, key K, job J, f *Flight, write func(J), claimed func(J, Backlog[S]) (next J, nf *Flight, ok bool)) {
	for {
		slots.Take()
		write(job)
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
		if job, f, ok = claimed(job, owed); !ok {
			return
		}
	}
}
