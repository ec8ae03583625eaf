package writeq

import (
	"errors"
	"fmt"
	"iter"
	"maps"
)

// Parking holds the keys that no loop holds while their write is in
// flight: a loop that has nothing more to run for a key parks it (Park)
// and goes to other keys' work. Either a loop takes the key over for its
// next result (TakeOver), and joins the write itself, or the write's
// goroutine, once the write returned, claims the key (Claim), makes the
// write its backlog owes, parked in turn (Next), and lets the key go.
// Exactly one of them gets the key: both run under the caller's lock.
// K is the key, J a write's job, S a status; all calls are made under the
// caller's lock.
//
// Invariant: a key is parked at most once, and only with a write in
// flight (so the write's goroutine will come for it); a parked key is
// held by no loop; Len is the number of keys parked.
type Parking[K comparable, J comparable, S any] struct {
	m map[K]Key[J, S]
}

// Park moves what the loop's k holds of key (its write in flight and its
// backlog) into p, leaving k empty. It panics if k has no write in flight
// or key is parked already.
func (p *Parking[K, J, S]) Park(key K, k *Key[J, S]) {
	if k.flight == nil {
		panic("writeq: Park with no write in flight")
	}
	if _, ok := p.m[key]; ok {
		panic("writeq: Park of a key parked already")
	}
	if p.m == nil {
		p.m = map[K]Key[J, S]{}
	}
	p.m[key] = *k
	k.Reset()
}

// Next parks key on job, the write its goroutine starts for what the
// claimed backlog owed, with f, which it starts; nothing is owed after
// it yet.
func (p *Parking[K, J, S]) Next(key K, job J, f *Flight) {
	var k Key[J, S]
	k.Begin(job, f)
	p.Park(key, &k)
}

// Parked reports whether key is parked.
func (p *Parking[K, J, S]) Parked(key K) bool {
	_, ok := p.m[key]
	return ok
}

// Len returns the number of keys parked.
func (p *Parking[K, J, S]) Len() int { return len(p.m) }

// Keys returns the keys parked, in no order.
func (p *Parking[K, J, S]) Keys() iter.Seq[K] { return maps.Keys(p.m) }

// TakeOver gives a loop the parked key: k gets its write in flight and
// backlog, and key is no longer parked. It reports false, changing
// nothing, if key is not parked. k must hold no write in flight.
func (p *Parking[K, J, S]) TakeOver(key K, k *Key[J, S]) bool {
	parked, ok := p.m[key]
	if !ok {
		return false
	}
	if k.flight != nil {
		panic("writeq: TakeOver into a Key with a write in flight")
	}
	delete(p.m, key)
	*k = parked
	return true
}

// Claim is called by the goroutine of job once the write returned (its
// Flight marked finished): if key is still parked on job, no loop holds
// the key, so the goroutine does; Claim unparks it and returns the
// backlog of the write after, with ok set. Otherwise a loop took the key
// over and joins job itself.
func (p *Parking[K, J, S]) Claim(key K, job J) (b Backlog[S], ok bool) {
	parked, ok := p.m[key]
	if !ok || parked.job != job {
		return b, false
	}
	delete(p.m, key)
	return parked.Backlog, true
}

// Check reports every broken invariant of p, each error naming the
// package invariant it breaks; nil if none is. A caller checks, under
// its lock, that no loop holds a parked key.
func (p *Parking[K, J, S]) Check() error {
	var errs []error
	for key, k := range p.m {
		if k.flight == nil {
			errs = append(errs, fmt.Errorf("1: %v is parked with no write in flight", key))
		} else if !k.flight.Started() {
			errs = append(errs, fmt.Errorf("2: %v is parked on a write that was never started", key))
		}
	}
	return errors.Join(errs...)
}
