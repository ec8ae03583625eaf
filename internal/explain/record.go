package explain

import (
	"maps"
	"time"

	"github.com/opbus/opbus/internal/record"
)

// AddRecord adds to r what rec holds of the object as a whole: its
// incarnations, pending states, related objects and named values.
func AddRecord[D ~[16]byte, S any, T any](r *Report, rec *record.Record[D, S, T]) {
	r.Incarnation, r.Values = rec.Inc, maps.Clone(rec.Values)
	if ms := rec.EndedAt(); ms != 0 {
		r.Ended = time.UnixMilli(ms)
	}
	for _, p := range rec.States() {
		r.Pending = append(r.Pending, Pending{Deleted: p.Deleted})
	}
	for k, d := range rec.Related() {
		r.AddRelated(Related{Key: k, Digest: record.EncodeDigest(d)})
	}
}

// FailureOf returns the facts of a recorded failure; nil for none.
func FailureOf[D ~[16]byte](f *record.Failure[D]) *Failure {
	if f == nil {
		return nil
	}
	return &Failure{On: record.EncodeDigest(f.On), N: f.N, At: f.At, Permanent: f.Permanent}
}
