package opbus

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// appendRecordJSON writes r as encoding/json would write its wireRecord
// (the same bytes: fields in order, map keys sorted, strings escaped alike;
// TestRecordJSONMatchesEncodingJSON holds it to that), without reflection,
// which was a fifth of a dispatch. ids names the handlers by index.
func appendRecordJSON(buf []byte, r *record, ids []string) ([]byte, error) {
	buf = append(buf, `{"v":`...)
	buf = strconv.AppendInt(buf, int64(r.version()), 10)
	if r.inc != "" {
		buf = append(buf, `,"inc":`...)
		buf = appendJSONString(buf, r.inc)
	}
	buf = appendDigestsJSON(buf, r.digests, ids)
	buf = appendFailsJSON(buf, r.fails)
	var err error
	if len(r.slots) > 0 {
		buf = append(buf, `,"slots":`...)
		if buf, err = appendSlotsJSON(buf, r.slots); err != nil {
			return nil, err
		}
	}
	if len(r.good) > 0 {
		buf = append(buf, `,"good":`...)
		if buf, err = appendSlotsJSON(buf, r.good); err != nil {
			return nil, err
		}
	}
	if len(r.values) > 0 {
		buf = append(buf, `,"values":{`...)
		for n, k := range sortedKeys(r.values) {
			if n > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			buf = appendJSONString(buf, r.values[k])
		}
		buf = append(buf, '}')
	}
	if buf, err = appendPendingJSON(buf, r.states()); err != nil {
		return nil, err
	}
	if len(r.olds) > 0 {
		buf = append(buf, `,"olds":{`...)
		for n, id := range sortedKeys(r.olds) {
			if n > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, id)
			buf = append(buf, ':', '"')
			buf = base64.StdEncoding.AppendEncode(buf, r.olds[id])
			buf = append(buf, '"')
		}
		buf = append(buf, '}')
	}
	buf = appendTimersJSON(buf, r.schedules())
	return append(buf, '}'), nil
}

// appendDigestsJSON writes the "digests" member of a record: the handlers'
// digests by ID, in ID order; nothing if none is set.
func appendDigestsJSON(buf []byte, digests []digest, ids []string) []byte {
	var small [64]int // the indexes of the handlers, without an allocation for most buses
	idx := small[:0]
	for i, d := range digests {
		if !d.isZero() {
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
		buf = appendJSONString(buf, ids[i])
		buf = append(buf, ':', '"')
		buf = base64.RawURLEncoding.AppendEncode(buf, digests[i][:])
		buf = append(buf, '"')
	}
	return append(buf, '}')
}

// appendFailsJSON writes the "fails" member of a record; nothing if none.
func appendFailsJSON(buf []byte, fails map[string]*failure) []byte {
	if len(fails) == 0 {
		return buf
	}
	buf = append(buf, `,"fails":{`...)
	for n, id := range sortedKeys(fails) {
		f := fails[id]
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, id)
		buf = append(buf, `:{"on":"`...)
		buf = base64.RawURLEncoding.AppendEncode(buf, f.on[:])
		buf = append(buf, `","n":`...)
		buf = strconv.AppendInt(buf, int64(f.n), 10)
		if !f.at.IsZero() {
			if ms := f.at.UnixMilli(); ms != 0 {
				buf = append(buf, `,"at":`...)
				buf = strconv.AppendInt(buf, ms, 10)
			}
		}
		if f.permanent {
			buf = append(buf, `,"permanent":true`...)
		}
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

// appendPendingJSON writes the "pending" member of a record; nothing if
// none.
func appendPendingJSON(buf []byte, ps []pendingState) ([]byte, error) {
	if len(ps) == 0 {
		return buf, nil
	}
	buf = append(buf, `,"pending":[`...)
	for n, p := range ps {
		snap, err := encodeSnapshot(p.Object)
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

// appendTimersJSON writes the "timers" member of a record, in handler ID
// order; nothing if none.
func appendTimersJSON(buf []byte, scheds []*schedule) []byte {
	if len(scheds) == 0 {
		return buf
	}
	buf = append(buf, `,"timers":{`...)
	for n, s := range scheds {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, s.id)
		buf = append(buf, `:{"at":`...)
		buf = strconv.AppendInt(buf, time.Duration(s.anchor).Milliseconds(), 10)
		buf = append(buf, `,"every":`...)
		buf = strconv.AppendInt(buf, s.every.Milliseconds(), 10)
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

func appendSlotsJSON(buf []byte, s Slots) ([]byte, error) {
	buf = append(buf, '{')
	for n, id := range sortedKeys(s) {
		st := s[id]
		word, err := st.Level.MarshalText()
		if err != nil {
			return nil, err
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, id)
		buf = append(buf, `:{"level":`...)
		buf = appendJSONString(buf, string(word))
		if st.Message != "" {
			buf = append(buf, `,"message":`...)
			buf = appendJSONString(buf, st.Message)
		}
		if st.Reason != "" {
			buf = append(buf, `,"reason":`...)
			buf = appendJSONString(buf, st.Reason)
		}
		buf = append(buf, '}')
	}
	return append(buf, '}'), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as encoding/json does with HTML escaping on:
// <, > and & as \u003c…, control characters as \n, \u0001…, invalid UTF-8
// as \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(buf []byte, s string) []byte {
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
