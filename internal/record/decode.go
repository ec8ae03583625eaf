package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Wire is the stored form of a record, as encoding/json reads it; maps
// encode in key order. S is the bus's slots type.
type Wire[S any] struct {
	Version int                    `json:"v"`
	Inc     string                 `json:"inc,omitempty"`
	Digests map[string]string      `json:"digests,omitempty"`
	Fails   map[string]WireFailure `json:"fails,omitempty"`
	Slots   S                      `json:"slots,omitempty"`
	Good    S                      `json:"good,omitempty"`
	Values  map[string]string      `json:"values,omitempty"`
	Pending []WirePending          `json:"pending,omitempty"`
	Olds    map[string][]byte      `json:"olds,omitempty"`
	Timers  map[string]WireTimer   `json:"timers,omitempty"`  // version 3
	Ended   int64                  `json:"ended,omitempty"`   // version 4: Unix milliseconds
	Related map[string]string      `json:"related,omitempty"` // version 4
}

// WireTimer is a stored schedule: due at At + k·Every (k ≥ 1).
type WireTimer struct {
	At    int64 `json:"at"`    // the anchor, Unix milliseconds
	Every int64 `json:"every"` // the period, milliseconds
}

// WireFailure is a stored failure.
type WireFailure struct {
	On        string `json:"on"`
	N         int    `json:"n"`
	At        int64  `json:"at,omitempty"` // Unix milliseconds
	Permanent bool   `json:"permanent,omitempty"`
}

// WirePending holds a state as a snapshot (see EncodeSnapshot), which keeps
// Go types and any bytes in strings, unlike JSON.
type WirePending struct {
	Deleted  bool   `json:"deleted,omitempty"`
	Snapshot []byte `json:"snapshot,omitempty"`
}

// errNotRecord prefixes what is not a record at all.
var errNotRecord = errors.New("not a record")

// Parse reads a stored record strictly into its stored form: unknown
// fields, a wrong version, data after the object, or a field of a newer
// version than the record's are errors. A version 1 record is refused
// here: Decode reads it.
func Parse[S any](data []byte) (*Wire[S], error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w Wire[S]
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotRecord, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", errNotRecord)
	}
	if w.Version < 2 || w.Version > Version {
		return nil, fmt.Errorf("unknown version %d: this build reads versions 1 to %d", w.Version, Version)
	}
	if len(w.Timers) > 0 && w.Version < 3 {
		return nil, fmt.Errorf("timers in a version %d record: expected version 3", w.Version)
	}
	if (w.Ended != 0 || len(w.Related) > 0) && w.Version < 4 {
		return nil, fmt.Errorf("an ended incarnation or relations in a version %d record: expected version 4", w.Version)
	}
	return &w, nil
}

// Decode reads a stored record strictly (see Parse). index maps handler
// IDs to indexes; digests, schedules and kept values of other handlers are
// dropped (a handler that comes back runs again).
func Decode[D ~[16]byte, S any, T any](data []byte, index map[string]int, c *Codec[S, T]) (*Record[D, S, T], error) {
	var probe struct {
		Version int `json:"v"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotRecord, err)
	}
	if probe.Version == 1 {
		return decodeV1[D](data, len(index), c)
	}
	w, err := Parse[S](data)
	if err != nil {
		return nil, err
	}
	return fromWire[D](w, index, c)
}

// fromWire returns the record w holds, keeping the digests, schedules and
// kept values of the handlers of index only.
func fromWire[D ~[16]byte, S any, T any](w *Wire[S], index map[string]int, c *Codec[S, T]) (*Record[D, S, T], error) {
	r := &Record[D, S, T]{Inc: w.Inc, Slots: w.Slots, Good: w.Good, Values: w.Values}
	if w.Ended < 0 {
		return nil, fmt.Errorf("ended at %dms: expected a time after 1970 in Unix milliseconds", w.Ended)
	}
	r.SetEndedAt(w.Ended)
	all, err := decodeDigests[D](w.Digests)
	if err != nil {
		return nil, fmt.Errorf("digests: %v", err)
	}
	r.Digests = make([]D, len(index))
	for id, d := range all {
		if i, ok := index[id]; ok {
			r.Digests[i] = d
		}
	}
	if r.Fails, err = failures[D](w.Fails); err != nil {
		return nil, err
	}
	if err := c.CheckSlots(r.Slots); err != nil {
		return nil, err
	}
	if err := readTimers(r, w.Timers, index, c); err != nil {
		return nil, err
	}
	if len(w.Related) > 0 {
		related, err := decodeDigests[D](w.Related)
		if err != nil {
			return nil, fmt.Errorf("related: %v", err)
		}
		r.SetRelated(related)
	}
	for i, p := range w.Pending {
		obj, err := DecodeSnapshot(p.Snapshot, c.ValidNumber)
		if err != nil {
			return nil, fmt.Errorf("pending state %d: %v", i, err)
		}
		r.AddPending(Pending{Deleted: p.Deleted, Object: obj})
	}
	for _, id := range slices.Sorted(maps.Keys(w.Olds)) {
		if _, err := DecodeSnapshot(w.Olds[id], c.ValidNumber); err != nil {
			return nil, fmt.Errorf("last handled value of %q: %v", id, err)
		}
		if _, ok := index[id]; ok {
			if r.Olds == nil {
				r.Olds = map[string][]byte{}
			}
			r.Olds[id] = w.Olds[id]
		}
	}
	return r, nil
}

// readTimers checks the stored timers and keeps those of the handlers of
// index.
func readTimers[D ~[16]byte, S any, T any](r *Record[D, S, T], timers map[string]WireTimer, index map[string]int, c *Codec[S, T]) error {
	var l []T
	for _, id := range slices.Sorted(maps.Keys(timers)) {
		wt := timers[id]
		if wt.Every <= 0 || wt.Every > MaxPeriod.Milliseconds() {
			return fmt.Errorf("timer of %q: period %dms: expected a positive period of at most %dms", id, wt.Every, MaxPeriod.Milliseconds())
		}
		if wt.At < 0 || wt.At > math.MaxInt64/int64(time.Millisecond) {
			return fmt.Errorf("timer of %q: due at %dms: expected a time between 1970 and 2262 in Unix milliseconds", id, wt.At)
		}
		if _, ok := index[id]; !ok {
			continue // of a handler no longer registered, like its digest
		}
		l = append(l, c.NewTimer(id, wt.At*int64(time.Millisecond), time.Duration(wt.Every)*time.Millisecond))
	}
	r.SetTimers(l)
	return nil
}

// failures returns the stored failures, nil for none.
func failures[D ~[16]byte](m map[string]WireFailure) (map[string]*Failure[D], error) {
	var fails map[string]*Failure[D]
	for _, id := range slices.Sorted(maps.Keys(m)) {
		wf := m[id]
		on, err := decodeDigests[D](map[string]string{id: wf.On})
		if err != nil {
			return nil, fmt.Errorf("failure: %v", err)
		}
		if wf.N < 0 {
			return nil, fmt.Errorf("failure of %q: negative count %d", id, wf.N)
		}
		if fails == nil {
			fails = map[string]*Failure[D]{}
		}
		f := &Failure[D]{On: on[id], N: wf.N, Permanent: wf.Permanent}
		if wf.At != 0 {
			f.At = time.UnixMilli(wf.At)
		}
		fails[id] = f
	}
	return fails, nil
}
