package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// names are what a Source writes into the objects it watches, derived from
// its [Options].Name so that two operators on the same objects keep apart.
// The default name "opbus" writes [AnnotationRecord], [AnnotationStatus],
// [Finalizer], [ConditionReady] and [ConditionType] of each slot; another
// name N writes under the domain N.opbus.dev instead: the annotations
// N.opbus.dev/record and N.opbus.dev/status, the finalizer
// N.opbus.dev/cleanup, and the condition types N.opbus.dev/Ready and
// N.opbus.dev/[ConditionType](slot). N is the name itself when it is a DNS label
// of at most 40 characters, and otherwise the name with every other
// character replaced by '-', shortened and followed by 8 hexadecimal
// digits of its SHA-256.
type names struct {
	domain    string // "" for the default name, else "N.opbus.dev"
	record    string
	status    string
	finalizer string
	ready     string // "" when there is no summary condition

	types    map[string]string // condition types the author chose, by slot ([Options].Conditions)
	abnormal map[string]bool   // abnormal-true slots
}

// namesFor returns the names of an operator called name.
func namesFor(name string) *names {
	if name == "" || name == defaultName {
		return &names{record: AnnotationRecord, status: AnnotationStatus, finalizer: Finalizer, ready: ConditionReady}
	}
	d := label(name) + ".opbus.dev"
	return &names{domain: d, record: d + "/record", status: d + "/status", finalizer: d + "/cleanup", ready: d + "/Ready"}
}

// defaultName is the name of an operator whose [Options].Name is "".
const defaultName = "opbus"

// label returns name as a DNS label of at most 49 characters.
func label(name string) string {
	l := strings.ToLower(name)
	if l == name && len(l) <= 40 && len(validation.IsDNS1123Label(l)) == 0 {
		return l
	}
	var b strings.Builder
	for _, c := range []byte(l) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	sum := sha256.Sum256([]byte(name))
	if s == "" {
		return "op-" + hex.EncodeToString(sum[:4])
	}
	return s + "-" + hex.EncodeToString(sum[:4])
}

// condition returns the condition type of the slot id: [ConditionType](id),
// under the domain for a named operator.
func (n *names) condition(id string) string {
	if t, ok := n.types[id]; ok {
		return t
	}
	return n.defaultCondition(id)
}

// defaultCondition is condition for a slot whose type the author did not
// choose.
func (n *names) defaultCondition(id string) string {
	if n.domain == "" {
		return ConditionType(id)
	}
	return n.domain + "/" + ConditionType(id)
}
