package opbus

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"
)

// recordVersion is the newest version of the record format: 3 adds the
// handlers' schedules (timers) to 2. This package writes a record without
// schedules as version 2, so that a build without timers still reads it,
// and reads versions 1 to 3; a record of another version is reported,
// never rewritten.
const recordVersion = 3

// record is what the bus keeps per incarnation of an object, in memory and
// in the Store.
type record struct {
	inc     string              // the incarnation it belongs to; "" if unknown
	digests []digest            // by handler index: the value it last handled; zero for none
	fails   map[string]*failure // handler ID → its failure on its current value
	good    Slots               // handler ID → its slot at its last success, while it is failing
	slots   Slots
	values  map[string]string // named values set by handlers and state machines
	pending *pendingStates    // observed states not handled when the bus stopped, oldest first; nil for none
	olds    map[string][]byte // handler ID → snapshot of its fields at its last success (On.KeepOld)
	sched   *schedules        // the handlers' schedules, by handler ID (timer.go); nil for none
}

// schedules is a list behind a pointer, as pendingStates is: most records
// have none (BenchmarkMemoryPerKey: the record fits a smaller size class).
type schedules []*schedule

// schedules returns the schedules, in handler ID order.
func (r *record) schedules() []*schedule {
	if r.sched == nil {
		return nil
	}
	return *r.sched
}

// setSchedules makes l the schedules; empty, none.
func (r *record) setSchedules(l []*schedule) {
	switch {
	case len(l) == 0:
		r.sched = nil
	case r.sched == nil:
		s := schedules(l)
		r.sched = &s
	default:
		*r.sched = l
	}
}

// pendingStates is a list behind a pointer: most records have none, and a
// pointer costs a third of a slice in every record kept in memory.
type pendingStates []pendingState

// states returns the pending states, oldest first.
func (r *record) states() []pendingState {
	if r.pending == nil {
		return nil
	}
	return *r.pending
}

// addPending appends a pending state.
func (r *record) addPending(p pendingState) {
	if r.pending == nil {
		r.pending = &pendingStates{}
	}
	*r.pending = append(*r.pending, p)
}

// failure is a handler's failure on one value: how many attempts failed,
// when the next is due, or that it failed for good.
type failure struct {
	on        digest
	n         int
	at        time.Time // next attempt; zero: at the next pass
	permanent bool
}

type pendingState struct {
	Deleted bool
	Object  map[string]any
}

// wireRecord is the JSON form of a record; maps encode in key order.
type wireRecord struct {
	Version int                    `json:"v"`
	Inc     string                 `json:"inc,omitempty"`
	Digests map[string]string      `json:"digests,omitempty"`
	Fails   map[string]wireFailure `json:"fails,omitempty"`
	Slots   Slots                  `json:"slots,omitempty"`
	Good    Slots                  `json:"good,omitempty"`
	Values  map[string]string      `json:"values,omitempty"`
	Pending []wirePending          `json:"pending,omitempty"`
	Olds    map[string][]byte      `json:"olds,omitempty"`
	Timers  map[string]wireTimer   `json:"timers,omitempty"` // version 3
}

// wireTimer is a stored schedule: due at At + k·Every (k ≥ 1).
type wireTimer struct {
	At    int64 `json:"at"`    // the anchor, Unix milliseconds
	Every int64 `json:"every"` // the period, milliseconds
}

type wireFailure struct {
	On        string `json:"on"`
	N         int    `json:"n"`
	At        int64  `json:"at,omitempty"` // Unix milliseconds
	Permanent bool   `json:"permanent,omitempty"`
}

// wirePending holds a state as a snapshot (see encodeSnapshot), which keeps
// Go types and any bytes in strings, unlike JSON.
type wirePending struct {
	Deleted  bool   `json:"deleted,omitempty"`
	Snapshot []byte `json:"snapshot,omitempty"`
}

func newRecord(handlers int) *record {
	return &record{digests: make([]digest, handlers)}
}

func encodeDigest(d digest) string { return base64.RawURLEncoding.EncodeToString(d[:]) }

// encode writes the record; ids names the handlers by index. It encodes
// in a pooled buffer and returns a copy of the record's size: the encoding
// buffer, sized up front or grown, was a quarter of the bytes allocated
// per update in bench BenchmarkDispatch's memory profile.
func (r *record) encode(ids []string) ([]byte, error) {
	buf := recordBufs.Get().(*[]byte)
	out, err := appendRecordJSON((*buf)[:0], r, ids)
	if err != nil {
		recordBufs.Put(buf)
		return nil, err
	}
	data := slices.Clone(out) // exactly its size: a store keeps it
	if cap(out) <= maxRecordBuf {
		*buf = out
		recordBufs.Put(buf)
	}
	return data, nil
}

// recordBufs are the buffers records are encoded in, before the copy of
// their size that is returned; maxRecordBuf bounds what the pool keeps.
var recordBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxRecordBuf = 64 << 10

// readRecord loads and decodes the record of key, nil if there is none:
// the one path by which the bus reads records. index maps handler IDs to
// indexes. A record that cannot be read is a *RecordError.
func (b *Bus) readRecord(ctx context.Context, key Key, index map[string]int) (*record, error) {
	data, err := b.cfg.store.Load(ctx, key)
	if err != nil || data == nil {
		return nil, err
	}
	return decodeRecord(key, data, index)
}

// decodeRecord reads a stored record strictly: unknown fields, a wrong
// version or a malformed digest are errors. index maps handler IDs to
// indexes; digests of other handlers are dropped (rule 19 of
// docs/semantics.md: a handler that comes back runs again).
func decodeRecord(key Key, data []byte, index map[string]int) (*record, error) {
	fail := func(format string, args ...any) (*record, error) {
		return nil, &RecordError{Key: key, Err: fmt.Errorf(format, args...)}
	}
	var probe struct {
		Version int `json:"v"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return fail("not a record: %v", err)
	}
	if probe.Version == 1 {
		return decodeRecordV1(key, data, len(index))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireRecord
	if err := dec.Decode(&w); err != nil {
		return fail("not a record: %v", err)
	}
	if dec.More() {
		return fail("not a record: data after the JSON object")
	}
	if w.Version != 2 && w.Version != recordVersion {
		return fail("unknown version %d: this build reads versions 1 to %d", w.Version, recordVersion)
	}
	if len(w.Timers) > 0 && w.Version < 3 {
		return fail("timers in a version %d record: expected version 3", w.Version)
	}
	r, err := w.record(index)
	if err != nil {
		return fail("%v", err)
	}
	return r, nil
}

// record returns the record w holds, keeping the digests, schedules and
// kept values of the handlers of index only (rule 19).
func (w *wireRecord) record(index map[string]int) (*record, error) {
	r := &record{inc: w.Inc, slots: w.Slots, good: w.Good, values: w.Values}
	all, err := decodeDigests(w.Digests)
	if err != nil {
		return nil, fmt.Errorf("digests: %v", err)
	}
	r.digests = make([]digest, len(index))
	for id, d := range all {
		if i, ok := index[id]; ok {
			r.digests[i] = d
		}
	}
	if r.fails, err = w.failures(); err != nil {
		return nil, err
	}
	if err := checkSlots(r.slots); err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(w.Timers)) {
		wt := w.Timers[id]
		if wt.Every <= 0 || wt.Every > maxPeriod.Milliseconds() {
			return nil, fmt.Errorf("timer of %q: period %dms: expected a positive period of at most %dms", id, wt.Every, maxPeriod.Milliseconds())
		}
		if wt.At < 0 || wt.At > math.MaxInt64/int64(time.Millisecond) {
			return nil, fmt.Errorf("timer of %q: due at %dms: expected a time between 1970 and 2262 in Unix milliseconds", id, wt.At)
		}
		if _, ok := index[id]; !ok {
			continue // of a handler no longer registered, like its digest (rule 19)
		}
		r.setSchedules(append(r.schedules(), &schedule{id: id, anchor: wt.At * int64(time.Millisecond), every: time.Duration(wt.Every) * time.Millisecond}))
	}
	for i, p := range w.Pending {
		obj, err := decodeSnapshot(p.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("pending state %d: %v", i, err)
		}
		r.addPending(pendingState{Deleted: p.Deleted, Object: obj})
	}
	for _, id := range slices.Sorted(maps.Keys(w.Olds)) {
		if _, err := decodeSnapshot(w.Olds[id]); err != nil {
			return nil, fmt.Errorf("last handled value of %q: %v", id, err)
		}
		if _, ok := index[id]; ok {
			if r.olds == nil {
				r.olds = map[string][]byte{}
			}
			r.olds[id] = w.Olds[id]
		}
	}
	return r, nil
}

// failures returns the handlers' failures w holds, nil for none.
func (w *wireRecord) failures() (map[string]*failure, error) {
	var fails map[string]*failure
	for _, id := range slices.Sorted(maps.Keys(w.Fails)) {
		wf := w.Fails[id]
		on, err := decodeDigests(map[string]string{id: wf.On})
		if err != nil {
			return nil, fmt.Errorf("failure: %v", err)
		}
		if wf.N < 0 {
			return nil, fmt.Errorf("failure of %q: negative count %d", id, wf.N)
		}
		if fails == nil {
			fails = map[string]*failure{}
		}
		f := &failure{on: on[id], n: wf.N, permanent: wf.Permanent}
		if wf.At != 0 {
			f.at = time.UnixMilli(wf.At)
		}
		fails[id] = f
	}
	return fails, nil
}

func checkSlots(s Slots) error {
	for _, id := range slices.Sorted(maps.Keys(s)) {
		if s[id].IsZero() {
			return fmt.Errorf("slot %q: empty status", id)
		}
	}
	return nil
}

// wireRecordV1 is the first record format. Its digests were computed by an
// older encoding, so they are checked and then dropped: every handler runs
// once more after an upgrade. Slots, values and a pending state are kept.
type wireRecordV1 struct {
	Version int               `json:"v"`
	Digests map[string]string `json:"digests,omitempty"`
	Failed  map[string]string `json:"failed,omitempty"`
	Retries map[string]int    `json:"retries,omitempty"`
	Slots   Slots             `json:"slots,omitempty"`
	Good    Slots             `json:"good,omitempty"`
	Values  map[string]string `json:"values,omitempty"`
	Pending *struct {
		Deleted bool            `json:"deleted,omitempty"`
		Object  json.RawMessage `json:"object,omitempty"`
	} `json:"pending,omitempty"`
}

func decodeRecordV1(key Key, data []byte, handlers int) (*record, error) {
	fail := func(format string, args ...any) (*record, error) {
		return nil, &RecordError{Key: key, Err: fmt.Errorf(format, args...)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireRecordV1
	if err := dec.Decode(&w); err != nil {
		return fail("not a record: %v", err)
	}
	if dec.More() {
		return fail("not a record: data after the JSON object")
	}
	if _, err := decodeDigests(w.Digests); err != nil {
		return fail("digests: %v", err)
	}
	if _, err := decodeDigests(w.Failed); err != nil {
		return fail("failed digests: %v", err)
	}
	for _, id := range slices.Sorted(maps.Keys(w.Retries)) {
		if w.Retries[id] < 0 {
			return fail("retries of %q: negative count %d", id, w.Retries[id])
		}
	}
	if err := checkSlots(w.Slots); err != nil {
		return fail("%v", err)
	}
	r := &record{digests: make([]digest, handlers), slots: w.Slots, good: w.Good, values: w.Values}
	if w.Pending != nil {
		p := pendingState{Deleted: w.Pending.Deleted}
		if len(w.Pending.Object) > 0 {
			if err := json.Unmarshal(w.Pending.Object, &p.Object); err != nil {
				return fail("pending state: %v", err)
			}
		}
		r.addPending(p)
	}
	return r, nil
}

func decodeDigests(m map[string]string) (map[string]digest, error) {
	out := make(map[string]digest, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		var d digest
		b, err := base64.RawURLEncoding.DecodeString(m[id])
		if err != nil || len(b) != len(d) {
			return nil, fmt.Errorf("%q: %q is not a digest (%d bytes in unpadded URL-safe base64)", id, m[id], len(d))
		}
		copy(d[:], b)
		out[id] = d
	}
	return out, nil
}

// hasAny reports whether the record holds anything of a handler.
func (r *record) hasAny() bool {
	for _, d := range r.digests {
		if !d.isZero() {
			return true
		}
	}
	return len(r.fails) > 0 || len(r.slots) > 0 || len(r.values) > 0
}
