package opbus

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// RecordVersion is the version of the record format this package writes and
// reads. A record of another version is reported, never rewritten.
const RecordVersion = 1

// ErrCorruptRecord marks a stored record that cannot be read: it does not
// decode, or has a version this package does not know. The key's handlers do
// not run until the record is repaired or deleted, since overwriting it
// would lose what it holds.
var ErrCorruptRecord = errors.New("corrupt record")

// RecordError reports a stored record that cannot be read.
type RecordError struct {
	Key Key
	Err error
}

// Error formats the error on one line.
func (e *RecordError) Error() string {
	return fmt.Sprintf("opbus: stored record of %v: %v", e.Key, e.Err)
}

// Unwrap returns the cause and [ErrCorruptRecord].
func (e *RecordError) Unwrap() []error { return []error{e.Err, ErrCorruptRecord} }

// record is what the bus keeps per object, in memory and in the Store.
type record struct {
	digests []digest          // by handler index: the value it last handled; zero for none
	others  map[string]string // digests of handlers this bus does not have, kept as found
	failed  map[string]digest // handler ID → digest of a value it failed on permanently
	retries map[string]int    // handler ID → failed attempts at the current value
	good    Slots             // handler ID → its slot at its last success, while it is failing
	slots   Slots
	values  map[string]string // named values set by handlers and state machines
	pending *pendingState     // an observed state not handled when the bus stopped
}

type pendingState struct {
	Deleted bool           `json:"deleted,omitempty"`
	Object  map[string]any `json:"object,omitempty"`
}

// UnmarshalJSON decodes the object as encoding/json does by default
// (numbers as float64), as a source built on encoding/json would give it,
// not with the json.Number the rest of the record is read with.
func (p *pendingState) UnmarshalJSON(data []byte) error {
	var w struct {
		Deleted bool            `json:"deleted"`
		Object  json.RawMessage `json:"object"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	p.Deleted = w.Deleted
	p.Object = nil
	if len(w.Object) > 0 {
		return json.Unmarshal(w.Object, &p.Object)
	}
	return nil
}

// wireRecord is the JSON form of a record; maps encode in key order.
type wireRecord struct {
	Version int               `json:"v"`
	Digests map[string]string `json:"digests,omitempty"`
	Failed  map[string]string `json:"failed,omitempty"`
	Retries map[string]int    `json:"retries,omitempty"`
	Slots   Slots             `json:"slots,omitempty"`
	Good    Slots             `json:"good,omitempty"`
	Values  map[string]string `json:"values,omitempty"`
	Pending *pendingState     `json:"pending,omitempty"`
}

func newRecord(handlers int) *record {
	return &record{digests: make([]digest, handlers)}
}

// encode writes the record; ids names the handlers by index.
func (r *record) encode(ids []string) ([]byte, error) {
	w := wireRecord{Version: RecordVersion, Retries: r.retries, Slots: r.slots, Good: r.good, Values: r.values, Pending: r.pending}
	w.Digests = maps.Clone(r.others)
	for i, d := range r.digests {
		if d.isZero() {
			continue
		}
		if w.Digests == nil {
			w.Digests = map[string]string{}
		}
		w.Digests[ids[i]] = base64.RawURLEncoding.EncodeToString(d[:])
	}
	w.Failed = encodeDigests(r.failed)
	if len(w.Retries) == 0 {
		w.Retries = nil
	}
	if len(w.Values) == 0 {
		w.Values = nil
	}
	if len(w.Slots) == 0 {
		w.Slots = nil
	}
	if len(w.Good) == 0 {
		w.Good = nil
	}
	return json.Marshal(w)
}

func encodeDigests(m map[string]digest) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, d := range m {
		out[k] = base64.RawURLEncoding.EncodeToString(d[:])
	}
	return out
}

// decodeRecord reads a stored record strictly: unknown fields, a wrong
// version or a malformed digest are errors. index maps handler IDs to
// indexes; digests of other handlers are kept as they are.
func decodeRecord(key Key, data []byte, index map[string]int) (*record, error) {
	fail := func(format string, args ...any) (*record, error) {
		return nil, &RecordError{Key: key, Err: fmt.Errorf(format, args...)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var w wireRecord
	if err := dec.Decode(&w); err != nil {
		return fail("not a record: %v", err)
	}
	if dec.More() {
		return fail("not a record: data after the JSON object")
	}
	if w.Version != RecordVersion {
		return fail("unknown version %d: this build reads version %d", w.Version, RecordVersion)
	}
	r := &record{retries: w.Retries, slots: w.Slots, good: w.Good, values: w.Values, pending: w.Pending}
	all, err := decodeDigests(w.Digests)
	if err != nil {
		return fail("digests: %v", err)
	}
	r.digests = make([]digest, len(index))
	for id, d := range all {
		if i, ok := index[id]; ok {
			r.digests[i] = d
		} else {
			if r.others == nil {
				r.others = map[string]string{}
			}
			r.others[id] = w.Digests[id]
		}
	}
	if r.failed, err = decodeDigests(w.Failed); err != nil {
		return fail("failed digests: %v", err)
	}
	for _, id := range slices.Sorted(maps.Keys(r.slots)) {
		if r.slots[id].IsZero() {
			return fail("slot %q: empty status", id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.retries)) {
		if r.retries[id] < 0 {
			return fail("retries of %q: negative count %d", id, r.retries[id])
		}
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
