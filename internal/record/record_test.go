package record

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"
)

type slots map[string]string

type timer struct {
	id     string
	anchor int64
	every  time.Duration
}

var codec = Codec[slots, *timer]{
	AppendSlots: func(buf []byte, name string, s slots) ([]byte, error) {
		if len(s) == 0 {
			return buf, nil
		}
		b, err := json.Marshal(s)
		return append(append(buf, name...), b...), err
	},
	CheckSlots:  func(slots) error { return nil },
	Timer:       func(t *timer) (string, int64, time.Duration) { return t.id, t.anchor, t.every },
	NewTimer:    func(id string, a int64, e time.Duration) *timer { return &timer{id, a, e} },
	ValidNumber: func(n json.Number) bool { _, err := n.Float64(); return err == nil },
}

// TestVersionIsTheLowestThatHoldsIt: a record is written in version 2,
// 3 with timers, 4 with an ended incarnation or relations, and reads back
// the same.
func TestVersionIsTheLowestThatHoldsIt(t *testing.T) {
	ids := []string{"a", "b"}
	for _, tc := range []struct {
		name string
		edit func(r *Record[[16]byte, slots, *timer])
		want string
	}{
		{"plain", func(r *Record[[16]byte, slots, *timer]) { r.Digests[0] = [16]byte{1} }, `{"v":2,`},
		{"timers", func(r *Record[[16]byte, slots, *timer]) {
			r.SetTimers([]*timer{{"b", int64(time.Minute), time.Minute}})
		}, `{"v":3,`},
		{"ended", func(r *Record[[16]byte, slots, *timer]) { r.SetEndedAt(1700000000000) }, `{"v":4,`},
		{"related", func(r *Record[[16]byte, slots, *timer]) {
			r.SetRelated(map[string][16]byte{"Pod/ns/p": {2}})
		}, `{"v":4,`},
	} {
		r := New[[16]byte, slots, *timer](len(ids))
		tc.edit(&r)
		data, err := Encode(&r, ids, &codec)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), tc.want) {
			t.Errorf("%s: %s, want it to start with %s", tc.name, data, tc.want)
		}
		back, err := Decode[[16]byte](data, map[string]int{"a": 0, "b": 1}, &codec)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if back.EndedAt() != r.EndedAt() || !maps.Equal(back.Related(), r.Related()) || back.Digests[0] != r.Digests[0] || len(back.Timers()) != len(r.Timers()) {
			t.Errorf("%s: read back %+v, want %+v", tc.name, back, r)
		}
	}
}

// TestNewerFieldsInAnOlderVersionRefused: a field of version 4 in a
// record that says 3 is corrupt, not read.
func TestNewerFieldsInAnOlderVersionRefused(t *testing.T) {
	for _, data := range []string{`{"v":3,"ended":1}`, `{"v":4,"ended":-1}`, `{"v":2,"related":{"k":"AQAAAAAAAAAAAAAAAAAAAA"}}`, `{"v":5}`, `{"v":4,"related":{"k":"short"}}`} {
		if _, err := Decode[[16]byte]([]byte(data), nil, &codec); err == nil {
			t.Errorf("Decode(%s) read it; want an error", data)
		}
	}
}

func TestNextAttempt(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	r := New[[16]byte, slots, *timer](0)
	if got := r.NextAttempt(); !got.IsZero() {
		t.Errorf("NextAttempt without failures = %v; want the zero time", got)
	}
	r.Fails = map[string]*Failure[[16]byte]{
		"now":     {N: 1},                              // at the next pass: no time
		"forgood": {N: 1, At: at(10), Permanent: true}, // never again
		"late":    {N: 2, At: at(30)},
		"soon":    {N: 1, At: at(20)},
	}
	if got := r.NextAttempt(); !got.Equal(at(20)) {
		t.Errorf("NextAttempt = %v; want %v, the earliest failure not for good with a time", got, at(20))
	}
}
