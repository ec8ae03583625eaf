package record

import "time"

// TombstoneTTL is how long a tombstone lasts: an older one is a record
// that is not there.
const TombstoneTTL = 24 * time.Hour

// Tombstone returns the record that replaces the record of incarnation
// inc once its deletion has finished, at now: it holds the incarnation
// and when its deletion finished (EndedAt, never 0), and nothing else.
func Tombstone[D ~[16]byte, S any, T any](inc string, now time.Time) Record[D, S, T] {
	r := New[D, S, T](0)
	r.Inc = inc
	r.SetEndedAt(max(now.UnixMilli(), 1))
	return r
}

// Expired reports whether r is a tombstone older than TombstoneTTL at now.
func (r *Record[D, S, T]) Expired(now time.Time) bool {
	at := r.EndedAt()
	return at != 0 && now.Sub(time.UnixMilli(at)) > TombstoneTTL
}
