package record

import (
	"fmt"
	"maps"
	"slices"
)

// AppendSlots writes the member name and the slots s (slot ID → status)
// as encoding/json writes them: a JSON object, IDs in order, each status
// an object of its level word, then its message and reason when not
// empty. It writes nothing at all if s is empty. status gives a status's
// parts; its error, for a level that has no word, is returned.
func AppendSlots[M ~map[string]St, St any](buf []byte, name string, s M, status func(St) (level []byte, message, reason string, err error)) ([]byte, error) {
	if len(s) == 0 {
		return buf, nil
	}
	buf = append(buf, name...)
	buf = append(buf, '{')
	for n, id := range SortedKeys(s) {
		word, message, reason, err := status(s[id])
		if err != nil {
			return nil, err
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, id)
		buf = append(buf, `:{"level":`...)
		buf = AppendJSONString(buf, string(word))
		if message != "" {
			buf = append(buf, `,"message":`...)
			buf = AppendJSONString(buf, message)
		}
		if reason != "" {
			buf = append(buf, `,"reason":`...)
			buf = AppendJSONString(buf, reason)
		}
		buf = append(buf, '}')
	}
	return append(buf, '}'), nil
}

// CheckSlots reports the first slot of s, in ID order, that holds the zero
// status: no stored record holds an empty slot.
func CheckSlots[M ~map[string]St, St comparable](s M) error {
	var empty St
	for _, id := range slices.Sorted(maps.Keys(s)) {
		if s[id] == empty {
			return fmt.Errorf("slot %q: empty status", id)
		}
	}
	return nil
}
