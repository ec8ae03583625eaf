package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// wireV1 is the first record format. Its digests were computed by an
// older encoding, so they are checked and then dropped: every handler runs
// once more after an upgrade. Slots, values and a pending state are kept.
type wireV1[S any] struct {
	Version int               `json:"v"`
	Digests map[string]string `json:"digests,omitempty"`
	Failed  map[string]string `json:"failed,omitempty"`
	Retries map[string]int    `json:"retries,omitempty"`
	Slots   S                 `json:"slots,omitempty"`
	Good    S                 `json:"good,omitempty"`
	Values  map[string]string `json:"values,omitempty"`
	Pending *struct {
		Deleted bool            `json:"deleted,omitempty"`
		Object  json.RawMessage `json:"object,omitempty"`
	} `json:"pending,omitempty"`
}

// decodeV1 reads a version 1 record for a bus of n handlers.
func decodeV1[D ~[16]byte, S any, T any](data []byte, n int, c *Codec[S, T]) (*Record[D, S, T], error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireV1[S]
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotRecord, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", errNotRecord)
	}
	if _, err := decodeDigests[D](w.Digests); err != nil {
		return nil, fmt.Errorf("digests: %v", err)
	}
	if _, err := decodeDigests[D](w.Failed); err != nil {
		return nil, fmt.Errorf("failed digests: %v", err)
	}
	for _, id := range slices.Sorted(maps.Keys(w.Retries)) {
		if w.Retries[id] < 0 {
			return nil, fmt.Errorf("retries of %q: negative count %d", id, w.Retries[id])
		}
	}
	if err := c.CheckSlots(w.Slots); err != nil {
		return nil, err
	}
	r := &Record[D, S, T]{Digests: make([]D, n), Slots: w.Slots, Good: w.Good, Values: w.Values}
	if w.Pending != nil {
		p := Pending{Deleted: w.Pending.Deleted}
		if len(w.Pending.Object) > 0 {
			if err := json.Unmarshal(w.Pending.Object, &p.Object); err != nil {
				return nil, fmt.Errorf("pending state: %v", err)
			}
		}
		r.AddPending(p)
	}
	return r, nil
}
