package opbus

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	stored "github.com/opbus/opbus/internal/record"
)

// record is what the bus keeps per incarnation of an object, in memory and
// in the Store: the model and its stored form are internal/record's; the
// root gives it the bus's digests, slots and schedules.
type record struct {
	stored.Record[digest, Slots, *schedule]
}

// pendingState is an observed state not handled when the bus stopped.
type pendingState = stored.Pending

// recordCodec tells internal/record how the bus's slots and schedules are
// stored.
var recordCodec = stored.Codec[Slots, *schedule]{
	AppendSlots: appendSlotsJSON,
	CheckSlots:  stored.CheckSlots[Slots],
	Timer:       func(s *schedule) (string, int64, time.Duration) { return s.ID, s.Anchor, s.Every },
	NewTimer: func(id string, anchor int64, every time.Duration) *schedule {
		return &schedule{ID: id, Anchor: anchor, Every: every}
	},
	ValidNumber: validNumber,
}

func newRecord(handlers int) *record {
	return &record{stored.New[digest, Slots, *schedule](handlers)}
}

// encode writes the record; ids names the handlers by index.
func (r *record) encode(ids []string) ([]byte, error) {
	return stored.Encode(&r.Record, ids, &recordCodec)
}

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
	r, err := stored.Decode[digest](data, index, &recordCodec)
	if err != nil {
		return nil, &RecordError{Key: key, Err: err}
	}
	return &record{*r}, nil
}

// appendSlotsJSON writes name and s as encoding/json writes Slots (see
// internal/record's AppendSlots); nothing if s is empty.
func appendSlotsJSON(buf []byte, name string, s Slots) ([]byte, error) {
	return stored.AppendSlots(buf, name, s, func(st Status) ([]byte, string, string, error) {
		word, err := st.Level.MarshalText()
		return word, st.Message, st.Reason, err
	})
}

// validNumber reports whether n is a json.Number the bus accepts.
func validNumber(n json.Number) bool {
	_, ok := asNumber(n)
	return ok
}

// encodeSnapshot encodes a document so that it decodes to the same Go
// values (internal/record's snapshot); a value it cannot hold is a
// *ValueError.
func encodeSnapshot(obj map[string]any) ([]byte, error) {
	data, err := stored.EncodeSnapshot(obj, validNumber)
	var e *stored.EncodeError
	if errors.As(err, &e) {
		return nil, &ValueError{Path: pathOf(e.Segments()), Value: e.Value, Reason: e.Reason}
	}
	return data, err
}

// decodeSnapshot decodes what encodeSnapshot encoded.
func decodeSnapshot(data []byte) (map[string]any, error) {
	return stored.DecodeSnapshot(data, validNumber)
}

// hasAny reports whether the record holds anything of a handler.
func (r *record) hasAny() bool {
	for _, d := range r.Digests {
		if !d.isZero() {
			return true
		}
	}
	return len(r.Fails) > 0 || len(r.Slots) > 0 || len(r.Values) > 0
}
