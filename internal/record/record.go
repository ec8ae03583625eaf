// Package record is the record the bus keeps per incarnation of an object
// (in memory and in the Store) and its stored form.
//
// A record holds, for each handler, the digest of the value it last
// handled, its failure on the current value, its status slot, its kept
// value and its schedule; and, for the object, the states observed but not
// handled when the bus stopped, the named values, the incarnation, and
// since version 4 when that incarnation ended (a deletion whose handlers
// all ran) and the related objects its handlers last saw.
//
// Invariants:
//   - Digests has one entry per registered handler, by index; a zero digest
//     means "handled nothing". A stored record names handlers by ID, and
//     reading it keeps only the handlers registered now (a handler that
//     comes back runs again).
//   - Encode writes exactly what encoding/json writes for the stored form
//     (fields in order, map keys sorted, strings escaped alike), and the
//     lowest version that holds what the record holds: 2, 3 with timers,
//     4 with an ended incarnation or relations. Decode reads versions 1
//     to 4 strictly: unknown fields, a wrong version, a malformed digest,
//     an empty slot, a timer out of range are errors, never defaults.
//   - A handler's failure is on one value (failure.go): the attempts that
//     failed on it, and when the next is due or that none is (Permanent).
//     A failure on another value is replaced, never counted on.
//
// The package knows the bus's slots and schedules only through a Codec, so
// that it holds no policy: the root package instantiates Record with its
// own digest, slots and schedule types. AppendSlots and CheckSlots
// (slots.go) write and check slots of any status type, told its parts.
package record

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/opbus/opbus/internal/jsonvalue"
)

// Version is the newest version of the record format. Versions 1 to 4 are
// read; a record is written in the lowest version that holds it.
const Version = 4

// MaxNesting is how deep a document nests at most: the snapshot decoder
// refuses deeper input, as the bus refuses deeper values.
const MaxNesting = jsonvalue.MaxNesting

// MaxPeriod bounds a stored timer's period: 100 years, so that a due time
// in Unix nanoseconds stays inside an int64 for every anchor before 2162.
const MaxPeriod = 100 * 365 * 24 * time.Hour

// Record is what the bus keeps of one incarnation of an object. D is the
// bus's digest type, S its slots (handler ID → status), T a schedule.
type Record[D ~[16]byte, S any, T any] struct {
	Inc     string                 // the incarnation it belongs to; "" if unknown
	Digests []D                    // by handler index: the value it last handled; zero for none
	Fails   map[string]*Failure[D] // handler ID → its failure on its current value
	Good    S                      // handler ID → its slot at its last success, while it is failing
	Slots   S                      // handler ID → its slot
	Values  map[string]string      // named values set by handlers and state machines
	Olds    map[string][]byte      // handler ID → snapshot of its fields at its last success (On.KeepOld)
	rare    *rare[D, T]            // what most records lack, behind one pointer (see rare)
}

// rare is what most records lack. Kept behind one pointer so that the
// record fits the 96-byte size class (root BenchmarkMemoryPerKey: bytes
// per key).
type rare[D ~[16]byte, T any] struct {
	pending []Pending    // observed states not handled when the bus stopped, oldest first
	timers  []T          // the handlers' schedules, in handler ID order
	ended   int64        // when the incarnation's deletion finished, Unix milliseconds; 0: it did not (version 4)
	related map[string]D // related key → digest of the state the handlers last saw (version 4)
}

// Pending is an observed state not handled when the bus stopped.
type Pending struct {
	Deleted bool
	Object  map[string]any
}

// New returns an empty record for a bus of n handlers.
func New[D ~[16]byte, S any, T any](n int) Record[D, S, T] {
	return Record[D, S, T]{Digests: make([]D, n)}
}

// SetValue sets the named value; "" removes it. It reports whether the
// record changed.
func (r *Record[D, S, T]) SetValue(name, value string) bool {
	if r.Values[name] == value {
		return false
	}
	if value == "" {
		delete(r.Values, name)
		return true
	}
	if r.Values == nil {
		r.Values = map[string]string{}
	}
	r.Values[name] = value
	return true
}

// more returns r's rare part, making it.
func (r *Record[D, S, T]) more() *rare[D, T] {
	if r.rare == nil {
		r.rare = &rare[D, T]{}
	}
	return r.rare
}

// tidy drops the rare part when it holds nothing.
func (r *Record[D, S, T]) tidy() {
	if x := r.rare; x != nil && len(x.pending) == 0 && len(x.timers) == 0 && x.ended == 0 && len(x.related) == 0 {
		r.rare = nil
	}
}

// States returns the pending states, oldest first.
func (r *Record[D, S, T]) States() []Pending {
	if r.rare == nil {
		return nil
	}
	return r.rare.pending
}

// AddPending appends a pending state.
func (r *Record[D, S, T]) AddPending(p Pending) {
	x := r.more()
	x.pending = append(x.pending, p)
}

// ClearPending forgets the pending states.
func (r *Record[D, S, T]) ClearPending() {
	if r.rare != nil {
		r.rare.pending = nil
		r.tidy()
	}
}

// Timers returns the schedules, in handler ID order.
func (r *Record[D, S, T]) Timers() []T {
	if r.rare == nil {
		return nil
	}
	return r.rare.timers
}

// SetTimers makes l the schedules; empty, none.
func (r *Record[D, S, T]) SetTimers(l []T) {
	if len(l) == 0 && r.rare == nil {
		return
	}
	r.more().timers = l
	r.tidy()
}

// EndedAt returns when the incarnation's deletion finished, in Unix
// milliseconds; 0 if it did not. A record with it is a tombstone: it says
// that the deletion of its incarnation was handled.
func (r *Record[D, S, T]) EndedAt() int64 {
	if r.rare == nil {
		return 0
	}
	return r.rare.ended
}

// SetEndedAt sets when the incarnation's deletion finished, in Unix
// milliseconds; 0: it did not.
func (r *Record[D, S, T]) SetEndedAt(ms int64) {
	if ms != 0 || r.rare != nil {
		r.more().ended = ms
		r.tidy()
	}
}

// Related returns the related keys and the digests of the states the
// handlers last saw; nil for none. The map is r's own.
func (r *Record[D, S, T]) Related() map[string]D {
	if r.rare == nil {
		return nil
	}
	return r.rare.related
}

// SetRelated makes m the related keys and digests; empty, none.
func (r *Record[D, S, T]) SetRelated(m map[string]D) {
	if len(m) == 0 && r.rare == nil {
		return
	}
	r.more().related = m
	r.tidy()
}

// version returns the format version r is written in.
func (r *Record[D, S, T]) version() int {
	switch {
	case r.EndedAt() != 0 || len(r.Related()) > 0:
		return 4
	case len(r.Timers()) > 0:
		return 3
	}
	return 2
}

// EncodeDigest returns d as stored: unpadded URL-safe base64.
func EncodeDigest[D ~[16]byte](d D) string {
	return base64.RawURLEncoding.EncodeToString(d[:])
}

// decodeDigests reads the stored digests of m, by ID.
func decodeDigests[D ~[16]byte](m map[string]string) (map[string]D, error) {
	out := make(map[string]D, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		var d D
		b, err := base64.RawURLEncoding.DecodeString(m[id])
		if err != nil || len(b) != len(d) {
			return nil, fmt.Errorf("%q: %q is not a digest (%d bytes in unpadded URL-safe base64)", id, m[id], len(d))
		}
		copy(d[:], b)
		out[id] = d
	}
	return out, nil
}
