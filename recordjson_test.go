package opbus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	stored "github.com/opbus/opbus/internal/record"
)

// wireOf builds the stored.Wire[Slots] that encoding/json would be given for r.
func wireOf(t *testing.T, r *record, ids []string) stored.Wire[Slots] {
	t.Helper()
	w := stored.Wire[Slots]{Version: 2, Inc: r.Inc}
	for _, s := range r.Timers() {
		if w.Timers == nil {
			w.Version, w.Timers = 3, map[string]stored.WireTimer{}
		}
		w.Timers[s.ID] = stored.WireTimer{At: time.Duration(s.Anchor).Milliseconds(), Every: s.Every.Milliseconds()}
	}
	for i, d := range r.Digests {
		if d.isZero() {
			continue
		}
		if w.Digests == nil {
			w.Digests = map[string]string{}
		}
		w.Digests[ids[i]] = stored.EncodeDigest(d)
	}
	for id, f := range r.Fails {
		if w.Fails == nil {
			w.Fails = map[string]stored.WireFailure{}
		}
		wf := stored.WireFailure{On: stored.EncodeDigest(f.On), N: f.N, Permanent: f.Permanent}
		if !f.At.IsZero() {
			wf.At = f.At.UnixMilli()
		}
		w.Fails[id] = wf
	}
	if len(r.Slots) > 0 {
		w.Slots = r.Slots
	}
	if len(r.Good) > 0 {
		w.Good = r.Good
	}
	if len(r.Values) > 0 {
		w.Values = r.Values
	}
	for _, p := range r.States() {
		snap, err := encodeSnapshot(p.Object)
		must(t, err)
		w.Pending = append(w.Pending, stored.WirePending{Deleted: p.Deleted, Snapshot: snap})
	}
	if len(r.Olds) > 0 {
		w.Olds = r.Olds
	}
	return w
}

// TestRecordJSONMatchesEncodingJSON: the reflection-free record encoder
// writes exactly what encoding/json writes, for random records with every
// kind of string JSON escapes.
func TestRecordJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	odd := []string{"", "a", "h-1", "<b>&amp;", "quote\"back\\slash", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "\xff\xfe", "é ü 中", "\u2028\u2029", "\U0001F600", "a\xc3", "/path"}
	str := func() string {
		s := ""
		for range rng.IntN(3) + 1 {
			s += odd[rng.IntN(len(odd))]
		}
		return s
	}
	for i := range 2000 {
		ids := []string{str(), str() + "x", str() + "y", str() + "z"}
		r := newRecord(len(ids))
		if rng.IntN(2) == 0 {
			r.Inc = str()
		}
		for j := range r.Digests {
			if rng.IntN(2) == 0 {
				r.Digests[j] = digest{byte(i), byte(j), 1}
			}
		}
		if rng.IntN(2) == 0 {
			r.Fails = map[string]*stored.Failure[digest]{ids[0]: {On: digest{1}, N: rng.IntN(5)}, str(): {On: digest{2}, N: 1, Permanent: true, At: time.UnixMilli(rng.Int64N(1 << 40))}}
		}
		if rng.IntN(2) == 0 {
			r.Slots = Slots{ids[1]: {Level(rng.IntN(6)), str(), ""}, str() + "s": {LevelBlocked, "", "NeedsHuman"}}
		}
		if rng.IntN(3) == 0 {
			r.Good = Slots{ids[2]: {LevelActive, str(), ""}}
		}
		if rng.IntN(2) == 0 {
			r.Values = map[string]string{str(): str(), "k" + str(): str()}
		}
		if rng.IntN(3) == 0 {
			r.AddPending(pendingState{Object: map[string]any{"a": str(), "n": int64(rng.IntN(100))}})
			r.AddPending(pendingState{Deleted: true})
			r.AddPending(pendingState{Deleted: true, Object: map[string]any{}})
		}
		if rng.IntN(3) == 0 {
			snap, err := encodeSnapshot(map[string]any{"spec": map[string]any{"v": str()}})
			must(t, err)
			r.Olds = map[string][]byte{ids[3]: snap, str() + "o": {}}
		}
		if rng.IntN(3) == 0 {
			r.setSched(&schedule{ID: ids[3], Anchor: rng.Int64N(1<<40) * 1e6, Every: time.Duration(rng.IntN(1e6)+1) * time.Millisecond})
			r.setSched(&schedule{ID: str(), Anchor: -1e6, Every: time.Hour})
		}
		got, err := r.encode(ids)
		must(t, err)
		want, err := json.Marshal(wireOf(t, r, ids))
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestRecordEncodeOwnsItsBytes: encode reuses its buffer, and a store may
// keep what encode returns without a copy (the embedded store does), so
// no later encoding may write into a record returned before, and the
// embedded store must hold what the bus saved.
func TestRecordEncodeOwnsItsBytes(t *testing.T) {
	ids := []string{"a", "b"}
	first := newRecord(2)
	first.Digests[0] = digest{1: 7}
	data, err := first.encode(ids)
	must(t, err)
	kept := bytes.Clone(data)
	for i := range 50 {
		r := newRecord(2)
		r.Digests[1] = digest{2: byte(i)}
		r.Values = map[string]string{"state": string(bytes.Repeat([]byte{'x'}, i*40))}
		if _, err := r.encode(ids); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(data, kept) {
		t.Fatalf("a later encoding changed an earlier record:\nnow  %s\nwas  %s", data, kept)
	}
	if cap(data) != len(data) {
		t.Errorf("encode returned %d bytes in a buffer of %d: a store keeps the slack", len(data), cap(data))
	}

	ms := NewMemoryStore()
	bus, err := New(&Options{Store: ms})
	must(t, err)
	must(t, bus.Handle("h", func(context.Context, *Event) (Status, error) { return Status{}, nil }, On{Fields: []string{"spec"}}))
	key := Key{Kind: "Widget", Namespace: "default", Name: "w"}
	for i := range 3 {
		must(t, bus.Dispatch(context.Background(), key, map[string]any{"spec": map[string]any{"n": int64(i)}}))
	}
	stored, err := ms.Load(context.Background(), key)
	must(t, err)
	rec, err := decodeRecord(key, stored, map[string]int{"h": 0})
	must(t, err)
	want, err := digestOf(defaultComparer, map[string]any{"spec": map[string]any{"n": int64(2)}}, []Path{{MapKey("spec")}}, "")
	must(t, err)
	if rec.Digests[0] != want {
		t.Fatalf("the embedded store holds digest %x, want that of the last state, %x", rec.Digests[0], want)
	}
}

// TestRecordTimersOutOfRange: a stored timer whose period or due time
// would wrap when read in nanoseconds is a corrupt record, reported, not a
// schedule that fires at once or never.
func TestRecordTimersOutOfRange(t *testing.T) {
	index := map[string]int{"h": 0}
	for _, timer := range []string{
		`{"at":0,"every":9223372036854775}`,    // ms past 100 years
		`{"at":9223372036854775,"every":1000}`, // due past 2262
		`{"at":-1,"every":1000}`,
		`{"at":0,"every":0}`,
	} {
		data := []byte(`{"v":3,"timers":{"h":` + timer + `}}`)
		_, err := decodeRecord(podKey, data, index)
		if !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("record with timer %s: err = %v, want ErrCorruptRecord", timer, err)
		}
	}
	ok := []byte(`{"v":3,"timers":{"h":{"at":1700000000000,"every":60000}}}`)
	r, err := decodeRecord(podKey, ok, index)
	if err != nil || len(r.Timers()) != 1 || r.Timers()[0].Every != time.Minute {
		t.Fatalf("a good timer: %v, %+v", err, r)
	}
}
