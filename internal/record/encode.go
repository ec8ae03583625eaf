package record

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Codec is what the record needs to know of the bus's slots and
// schedules.
type Codec[S any, T any] struct {
	// AppendSlots writes the member name, a colon and the slots s as a
	// JSON object, keys in order; nothing at all if s is empty.
	AppendSlots func(buf []byte, name string, s S) ([]byte, error)
	// CheckSlots reports a slot that a stored record may not hold.
	CheckSlots func(s S) error
	// Timer returns a schedule's handler ID, anchor (Unix nanoseconds) and
	// period; NewTimer makes one.
	Timer    func(t T) (id string, anchor int64, every time.Duration)
	NewTimer func(id string, anchor int64, every time.Duration) T
	// ValidNumber tells the json.Numbers the bus accepts in a snapshot.
	ValidNumber func(json.Number) bool
}

// Encode writes r; ids names the handlers by index. It encodes in a pooled
// buffer and returns a copy of the record's size: the encoding buffer,
// sized up front or grown, was a quarter of the bytes allocated per update
// in bench BenchmarkDispatch's memory profile.
func Encode[D ~[16]byte, S any, T any](r *Record[D, S, T], ids []string, c *Codec[S, T]) ([]byte, error) {
	buf := recordBufs.Get().(*[]byte)
	out, err := appendRecord((*buf)[:0], r, ids, c)
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

// appendRecord writes r as encoding/json would write its stored form
// (the same bytes: fields in order, map keys sorted, strings escaped
// alike; the root's TestRecordJSONMatchesEncodingJSON holds it to that),
// without reflection, which was a fifth of a dispatch.
func appendRecord[D ~[16]byte, S any, T any](buf []byte, r *Record[D, S, T], ids []string, c *Codec[S, T]) ([]byte, error) {
	buf = append(buf, `{"v":`...)
	buf = strconv.AppendInt(buf, int64(r.version()), 10)
	if r.Inc != "" {
		buf = append(buf, `,"inc":`...)
		buf = AppendJSONString(buf, r.Inc)
	}
	buf = appendDigests(buf, r.Digests, ids)
	buf = appendFails(buf, r.Fails)
	var err error
	if buf, err = c.AppendSlots(buf, `,"slots":`, r.Slots); err != nil {
		return nil, err
	}
	if buf, err = c.AppendSlots(buf, `,"good":`, r.Good); err != nil {
		return nil, err
	}
	buf = appendStrings(buf, `,"values":`, r.Values)
	if buf, err = appendPending(buf, r.States(), c.ValidNumber); err != nil {
		return nil, err
	}
	if len(r.Olds) > 0 {
		buf = append(buf, `,"olds":{`...)
		for n, id := range SortedKeys(r.Olds) {
			if n > 0 {
				buf = append(buf, ',')
			}
			buf = AppendJSONString(buf, id)
			buf = append(buf, ':', '"')
			buf = base64.StdEncoding.AppendEncode(buf, r.Olds[id])
			buf = append(buf, '"')
		}
		buf = append(buf, '}')
	}
	buf = appendTimers(buf, r.Timers(), c)
	if ms := r.EndedAt(); ms != 0 {
		buf = append(buf, `,"ended":`...)
		buf = strconv.AppendInt(buf, ms, 10)
	}
	buf = appendRelated(buf, r.Related())
	return append(buf, '}'), nil
}

// appendStrings writes the member name and m as a JSON object of strings,
// keys in order; nothing if m is empty.
func appendStrings(buf []byte, name string, m map[string]string) []byte {
	if len(m) == 0 {
		return buf
	}
	buf = append(buf, name...)
	buf = append(buf, '{')
	for n, k := range SortedKeys(m) {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, k)
		buf = append(buf, ':')
		buf = AppendJSONString(buf, m[k])
	}
	return append(buf, '}')
}

// appendRelated writes the "related" member: related key → digest.
func appendRelated[D ~[16]byte](buf []byte, m map[string]D) []byte {
	if len(m) == 0 {
		return buf
	}
	buf = append(buf, `,"related":{`...)
	for n, k := range SortedKeys(m) {
		if n > 0 {
			buf = append(buf, ',')
		}
		d := m[k]
		buf = AppendJSONString(buf, k)
		buf = append(buf, ':', '"')
		buf = base64.RawURLEncoding.AppendEncode(buf, d[:])
		buf = append(buf, '"')
	}
	return append(buf, '}')
}

// appendDigests writes the "digests" member of a record: the handlers'
// digests by ID, in ID order; nothing if none is set.
func appendDigests[D ~[16]byte](buf []byte, digests []D, ids []string) []byte {
	var small [64]int // the indexes of the handlers, without an allocation for most buses
	idx := small[:0]
	for i, d := range digests {
		if d != (D{}) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return buf
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	buf = append(buf, `,"digests":{`...)
	for n, i := range idx {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, ids[i])
		buf = append(buf, ':', '"')
		buf = base64.RawURLEncoding.AppendEncode(buf, digests[i][:])
		buf = append(buf, '"')
	}
	return append(buf, '}')
}

// appendFails writes the "fails" member of a record; nothing if none.
func appendFails[D ~[16]byte](buf []byte, fails map[string]*Failure[D]) []byte {
	if len(fails) == 0 {
		return buf
	}
	buf = append(buf, `,"fails":{`...)
	for n, id := range SortedKeys(fails) {
		f := fails[id]
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, id)
		buf = append(buf, `:{"on":"`...)
		buf = base64.RawURLEncoding.AppendEncode(buf, f.On[:])
		buf = append(buf, `","n":`...)
		buf = strconv.AppendInt(buf, int64(f.N), 10)
		if !f.At.IsZero() {
			if ms := f.At.UnixMilli(); ms != 0 {
				buf = append(buf, `,"at":`...)
				buf = strconv.AppendInt(buf, ms, 10)
			}
		}
		if f.Permanent {
			buf = append(buf, `,"permanent":true`...)
		}
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

// appendPending writes the "pending" member of a record; nothing if
// none.
func appendPending(buf []byte, ps []Pending, valid func(json.Number) bool) ([]byte, error) {
	if len(ps) == 0 {
		return buf, nil
	}
	buf = append(buf, `,"pending":[`...)
	for n, p := range ps {
		snap, err := EncodeSnapshot(p.Object, valid)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		if p.Deleted {
			buf = append(buf, `"deleted":true`...)
		}
		if len(snap) > 0 {
			if p.Deleted {
				buf = append(buf, ',')
			}
			buf = append(buf, `"snapshot":"`...)
			buf = base64.StdEncoding.AppendEncode(buf, snap)
			buf = append(buf, '"')
		}
		buf = append(buf, '}')
	}
	return append(buf, ']'), nil
}

// appendTimers writes the "timers" member of a record, in handler ID
// order; nothing if none.
func appendTimers[S any, T any](buf []byte, timers []T, c *Codec[S, T]) []byte {
	if len(timers) == 0 {
		return buf
	}
	buf = append(buf, `,"timers":{`...)
	for n, t := range timers {
		id, anchor, every := c.Timer(t)
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, id)
		buf = append(buf, `:{"at":`...)
		buf = strconv.AppendInt(buf, time.Duration(anchor).Milliseconds(), 10)
		buf = append(buf, `,"every":`...)
		buf = strconv.AppendInt(buf, every.Milliseconds(), 10)
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

// SortedKeys returns the keys of m in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

const hexDigits = "0123456789abcdef"

// AppendJSONString writes s as a JSON string as encoding/json does with HTML escaping on:
// <, > and & as \u003c…, control characters as \n, \u0001…, invalid UTF-8
// as \ufffd, and U+2028 and U+2029 escaped.
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '\\', '"':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
