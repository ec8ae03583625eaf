package opbus

import "sync/atomic"

// Stats counts what a Bus has done since it was created.
type Stats struct {
	Observed   uint64 // states queued by Observe and its variants
	Dispatched uint64 // states dispatched to handlers (sync and async)
	Ran        uint64 // handler runs
	Failed     uint64 // handler runs that returned an error or panicked
	Panicked   uint64 // handler runs that panicked
	Retried    uint64 // retries scheduled
	Coalesced  uint64 // backlogs coalesced
	Merged     uint64 // passes whose record and status went with the next pass's write (rule 22a)
	Beside     uint64 // passes whose handlers ran while the write of the pass before was under way (rule 22c)
	Queued     int    // states waiting now
}

type counters struct {
	observed, dispatched, ran, failed, panicked, retried, coalesced, merged, beside atomic.Uint64
}

// Stats returns the bus's counters.
func (b *Bus) Stats() Stats {
	b.mu.Lock()
	q := b.q.kq.Len()
	b.mu.Unlock()
	return Stats{
		Observed:   b.stats.observed.Load(),
		Dispatched: b.stats.dispatched.Load(),
		Ran:        b.stats.ran.Load(),
		Failed:     b.stats.failed.Load(),
		Panicked:   b.stats.panicked.Load(),
		Retried:    b.stats.retried.Load(),
		Coalesced:  b.stats.coalesced.Load(),
		Merged:     b.stats.merged.Load(),
		Beside:     b.stats.beside.Load(),
		Queued:     q,
	}
}
