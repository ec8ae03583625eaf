package writeq

import "context"

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
	// Save saves the record of key; it checks Dropped itself, under the
	// key's stripe (Stripes).
	Save(ctx context.Context, key K, record []byte) error
	// SaveWithStatus saves the record and the status of key as one write
	// and reports true, or reports false, having written nothing, if the
	// store cannot (or key is dropped: Save then reports that).
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
// the status, which is Skipped if key was dropped meanwhile.
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
		if w.Put {
			w.Together, w.SaveErr = st.SaveWithStatus(ctx, key, w.Record, w.Status)
		}
		if !w.Together {
			w.SaveErr = st.Save(ctx, key, w.Record)
		}
	}
	if w.Put && !w.Together {
		if st.Dropped(key) {
			w.Skipped = true
		} else {
			w.PutErr = st.PutStatus(ctx, key, w.Status)
		}
	}
}
