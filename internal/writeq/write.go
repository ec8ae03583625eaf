package writeq

import (
	"context"
	"sync"
)

// Write is one write of a key's result as the caller filled it: the
// record to save (nil if it is saved already) and, if Put, the status for
// the sink, which goes after Before, the statuses of the results queued
// behind the write before it. Make makes it; the fields after Before say
// what it did, and are read once it was made.
type Write[S any] struct {
	Record []byte
	Put    bool
	Status S
	Before []S

	Together bool  // the record and the status went as one write
	Skipped  bool  // the status was not written: the key's results are dropped
	SaveErr  error // of the record, or of both together
	PutErr   error // of the status alone
}

// Store is how the writes of a key K reach the caller's store and sink:
// the caller's policy, for Make.
type Store[K, S any] interface {
	// Dropped reports whether the results of key are abandoned (invariant
	// 6): Make writes no status of it after.
	Dropped(key K) bool
	// Stripe returns the stripe of key (Stripes.Of), which Make holds
	// across its calls of SaveWithStatus and Save.
	Stripe(key K) sync.Locker
	// Save saves the record of key; it checks Dropped itself, under the
	// key's stripe, and reports the abandoned write.
	Save(ctx context.Context, key K, record []byte) error
	// SaveWithStatus saves the record and the status of key as one write
	// and reports true, or reports false, having written nothing, if the
	// store cannot (or key is dropped: Save then reports that); the key's
	// stripe is held.
	SaveWithStatus(ctx context.Context, key K, record []byte, status S) (bool, error)
	// PutStatus hands a status of key to the sink.
	PutStatus(ctx context.Context, key K, status S) error
	// BeforeFailed reports a status of Before that the sink refused; the
	// write's own status still goes.
	BeforeFailed(key K, status S, err error)
}

// Make makes w, a write of key, through st. The statuses of Before go
// first, in order, until one fails or key is dropped. Then the record and
// the status go as one write if st can (Together), else the record, then
// the status, which is Skipped if key was dropped meanwhile. The record is
// saved under the key's stripe (invariant 6).
func Make[K, S any](ctx context.Context, st Store[K, S], key K, w *Write[S]) {
	for _, s := range w.Before {
		if st.Dropped(key) {
			break
		}
		if err := st.PutStatus(ctx, key, s); err != nil {
			st.BeforeFailed(key, s, err)
			break
		}
	}
	if w.Record != nil {
		mu := st.Stripe(key)
		mu.Lock()
		if w.Put {
			w.Together, w.SaveErr = st.SaveWithStatus(ctx, key, w.Record, w.Status)
		}
		if !w.Together {
			w.SaveErr = st.Save(ctx, key, w.Record)
		}
		mu.Unlock()
	}
	if w.Put && !w.Together {
		if st.Dropped(key) {
			w.Skipped = true
		} else {
			w.PutErr = st.PutStatus(ctx, key, w.Status)
		}
	}
}

// StatusLost reports whether the status of w, made, did not reach the
// sink: it went with the record, which failed; the key was dropped
// before it went (Skipped); or the sink refused it (PutErr).
func (w *Write[S]) StatusLost() bool {
	return w.Put && ((w.Together && w.SaveErr != nil) || w.Skipped || w.PutErr != nil)
}

// Carry has w carry status to the sink (Put) after before, the statuses of
// the results queued behind the write before it (Backlog.Take), less the
// last of them if it is status itself (by same): consecutive equal
// statuses go once (invariant 3).
func (w *Write[S]) Carry(status S, before []S, same func(a, b S) bool) {
	if n := len(before); n > 0 && same(before[n-1], status) {
		before = before[:n-1]
	}
	w.Put, w.Status, w.Before = true, status, before
}
