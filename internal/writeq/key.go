package writeq

// Key is what the loop that owns a key keeps of the key's writes: the
// write in flight, if any (a job J with its Flight), and the Backlog of
// the write after it. A Key moves whole between the loop and a Parking
// when the loop lets the key go while its write is in flight; the loop
// that takes the key over gets it back, or the write's goroutine claims
// it (see Parking).
//
// Invariant: at most one write in flight (Begin refuses a second, by a
// panic, until Join took the first); InFlight reports whether there is
// one; Reset and Join leave none. The zero Key holds nothing.
type Key[J any, S any] struct {
	job    J
	flight *Flight
	// Backlog is what the write after the one in flight owes.
	Backlog Backlog[S]
}

// Begin puts job in flight with f, which it starts: the caller starts the
// goroutine that makes the write next. It panics if a write of the key is
// in flight already (invariant 1 of the package).
func (k *Key[J, S]) Begin(job J, f *Flight) {
	if k.flight != nil {
		panic("writeq: Begin with a write of the key in flight")
	}
	f.Start()
	k.job, k.flight = job, f
}

// InFlight reports whether a write of the key is in flight.
func (k *Key[J, S]) InFlight() bool { return k.flight != nil }

// Running reports whether a write is in flight and has not returned yet;
// the caller's lock is held (see Flight.Finished).
func (k *Key[J, S]) Running() bool { return k.flight != nil && !k.flight.Finished() }

// Join waits for the write in flight, if any, and returns its job, for
// the caller to take its outcome in, with ok set; k then holds no write
// in flight, its Backlog unchanged.
func (k *Key[J, S]) Join() (job J, ok bool) {
	if k.flight == nil {
		return job, false
	}
	k.flight.Wait()
	job = k.job
	k.drop()
	return job, true
}

// Reset forgets the write in flight, whose goroutine finishes it, and
// what the next write owes.
func (k *Key[J, S]) Reset() { *k = Key[J, S]{} }

// drop forgets the write in flight.
func (k *Key[J, S]) drop() {
	var zero J
	k.job, k.flight = zero, nil
}
