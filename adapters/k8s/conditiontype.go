package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// maxConditionType bounds what [ConditionType] returns: the name part of a
// qualified name.
const maxConditionType = 63

// ConditionType returns the type of the condition written for the status
// slot named id, in the CamelCase of Kubernetes' own condition types: id
// split into words at every character other than an ASCII letter or digit,
// each word's first letter in upper case, joined ("crash-watch",
// "crash_watch", "crash.watch" and "probe health" all give "CrashWatch"
// and "ProbeHealth"; "CrashWatch" stays as it is; "example.com/x" gives
// "ExampleComX"). A result longer than 63 bytes is cut to 55 and followed
// by 8 hexadecimal digits of id's SHA-256, and an id with no letter or
// digit gives "Slot" and those digits. A named operator writes the type
// under its domain: "N.opbus.dev/CrashWatch" (see [Options].Name).
//
// Two slots of a bus whose ids give the same type, or a slot whose type is
// the summary's, [ConditionReady] unless [Options].SummaryCondition names
// another (a slot named "ready"), make [Source.Run] fail with an error
// naming both: one of them must be renamed, or the summary. Conditions that an
// earlier version of the adapter wrote under the ids' former spelling
// ("crash-watch") are removed at the next status write.
func ConditionType(id string) string {
	var b strings.Builder
	upper := true
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z':
			if upper {
				c -= 'a' - 'A'
			}
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		default:
			upper = true
			continue
		}
		b.WriteByte(c)
		upper = false
	}
	t := b.String()
	if t != "" && len(t) <= maxConditionType {
		return t
	}
	sum := sha256.Sum256([]byte(id))
	suffix := hex.EncodeToString(sum[:4])
	if t == "" {
		return "Slot" + suffix
	}
	return t[:maxConditionType-len(suffix)] + suffix
}

// conditionTypes returns the condition type of each slot id, and an error
// naming two ids that give the same type, or an id whose type is ready's.
func conditionTypes(n *names, ids []string) (map[string]string, error) {
	types := map[string]string{}
	by := map[string]string{} // type → the first id that gave it
	var clashes []string
	for _, id := range ids {
		if _, done := types[id]; done {
			continue
		}
		t := n.condition(id)
		types[id] = t
		switch other, taken := by[t]; {
		case t == n.ready:
			clashes = append(clashes, fmt.Sprintf("slot %q gives condition type %s, the summary's own (set Options.SummaryCondition to name the summary otherwise)", id, t))
		case taken:
			clashes = append(clashes, fmt.Sprintf("slots %q and %q both give condition type %s", other, id, t))
		default:
			by[t] = id
		}
	}
	if clashes != nil {
		return nil, fmt.Errorf("k8s: %s: each slot writes a condition named by k8s.ConditionType (its id in CamelCase); rename one of the slots", strings.Join(clashes, "; "))
	}
	return types, nil
}

// legacyConditionTypes returns the condition types that earlier versions
// of the adapter wrote for the slot ids, where they differ from today's
// and from every type in ours: the id itself when it was a valid qualified
// name, else a hashed spelling ("my slot" → "my-slot-14b6f228"). They are
// the adapter's own, and are removed when found.
func legacyConditionTypes(n *names, ids []string, ours map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, id := range ids {
		if t := n.legacyCondition(id); !ours[t] {
			out[t] = true
		}
	}
	return out
}

// legacyCondition returns the condition type that earlier versions of the
// adapter wrote for the slot id.
func (n *names) legacyCondition(id string) string {
	if n.domain == "" {
		return legacyConditionType(id)
	}
	if id != "Ready" && len(id) <= 63 && !strings.Contains(id, "/") && len(validation.IsQualifiedName(id)) == 0 {
		return n.domain + "/" + id
	}
	t := legacyConditionType(strings.ReplaceAll(id, "/", "_") + "\x00") // never valid: always hashed
	if len(t) > 63 {
		t = t[len(t)-63:]
	}
	return n.domain + "/" + strings.TrimLeft(t, "-_.")
}

// legacyConditionType is what ConditionType returned before condition
// types were CamelCase.
func legacyConditionType(id string) string {
	if id != ConditionReady && len(id) <= 316 && len(validation.IsQualifiedName(id)) == 0 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	suffix := hex.EncodeToString(sum[:4])
	var b strings.Builder
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteByte(c)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimFunc(b.String(), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	if len(name) > 50 {
		name = strings.TrimRight(name[:50], "-_.")
	}
	if name == "" {
		return "slot-" + suffix
	}
	return name + "-" + suffix
}

// levelReasons are the reasons the adapter's conditions had before slots
// could give their own: the level words in CamelCase.
var levelReasons = []string{"Unknown", "Active", "Waiting", "Maintenance", "Blocked", "Error"}

// legacyFound returns the types in legacy of the conditions in obj that
// the adapter wrote: those whose reason is a level's word (a condition of
// that type with another reason is someone else's and stays).
func legacyFound(obj map[string]any, legacy map[string]bool) map[string]bool {
	if len(legacy) == 0 {
		return nil
	}
	existing, _ := conditions(obj)
	var found map[string]bool
	for _, e := range existing {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		r, _ := m["reason"].(string)
		if legacy[t] && slices.Contains(levelReasons, r) {
			if found == nil {
				found = map[string]bool{}
			}
			found[t] = true
		}
	}
	return found
}

// ownConditions returns the union of ours and more, without copying when
// more is empty.
func ownConditions(ours, more map[string]bool) map[string]bool {
	if len(more) == 0 {
		return ours
	}
	out := maps.Clone(ours)
	maps.Copy(out, more)
	return out
}
