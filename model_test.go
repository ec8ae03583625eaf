package opbus

// The reference model of TestSimulation: a small sequential reading of
// docs/semantics.md. It knows nothing of digests, queues, timers or records:
// a handler's value is the canonical text of what it subscribes to (below),
// and the model replays the operations one after the other to say what must
// hold once the bus is quiescent.
//
// Where the contract is silent the model picks what a user of an operator
// library would expect; every such choice is marked "CHOICE:".

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// simListKeys are the Options.ListKeys of the sequences that use list keys.
var simListKeys = map[string]string{"containers": "name", "containerStatuses": "name", "conditions": "type"}

// simIgnore is what every simulated bus ignores besides defaultIgnore.
var simIgnore = []string{"metadata.labels"}

// simMapWildcard registers handler sel, which reads spec.selector[*]: the
// values of a map whose keys hold NUL and other odd bytes. It
// was off while the engine ran a [*] subscription over a map only once
// (touches took [*] for a list element only; see testdata/sim-findings.md).
const simMapWildcard = true

// simHandler describes one registered handler of the simulation.
type simHandler struct {
	id       string
	types    []EventType
	fields   []string
	revision string
	writes   []string      // On.Writes: paths of simple keys under fields
	gated    bool          // has an On.When filter
	every    time.Duration // On.Every (sim_timer_test.go)
	again    bool          // asks to run again (sim_timer_test.go)
}

// simHandlers returns the handlers a bus of generation gen registers; a
// config may leave one out for a while (rule 19) or bump a revision (rule 4).
func simHandlers(cfg simConfig, gen int) []simHandler {
	hs := []simHandler{
		{id: "spec", fields: []string{"spec.replicas", "spec.image", "spec.big"}, revision: "r1"},
		{id: "img0", fields: []string{"spec.containers[0].image"}},
		{id: "app", fields: []string{"status.containerStatuses[name=app].state"}},
		{id: "conds", fields: []string{"status.conditions[*].status"}},
		{id: "whole"},
		{id: "gated", fields: []string{"spec.replicas"}, gated: true},
		{id: "create", types: []EventType{Create}, fields: []string{"spec.image"}},
		{id: "del", types: []EventType{Delete}},
		{id: "del2", types: []EventType{Delete}},
		{id: "resume", types: []EventType{Resume}},
		{id: "moved", fields: []string{"spec.image"}},
		{id: "verdict", fields: []string{"spec.replicas"}},
		{id: "tick", fields: []string{"spec.replicas"}, every: simTick},
		{id: "poll", fields: []string{"spec.image"}, again: true},
		{id: "wspec", fields: []string{"spec"}, writes: []string{"spec.big"}}, // rule 5a
	}
	if cfg.fieldsOnly {
		hs = slices.DeleteFunc(hs, func(h simHandler) bool { return h.id == "whole" })
	}
	if simMapWildcard {
		hs = append(hs, simHandler{id: "sel", fields: []string{"spec.selector[*]"}})
	}
	if cfg.revisionBumps > 0 && gen >= cfg.revisionBumps {
		hs[0].revision = "r2"
	}
	if cfg.fieldSwap > 0 && gen >= cfg.fieldSwap {
		// The same value at another path (rule 4).
		hs[slices.IndexFunc(hs, func(h simHandler) bool { return h.id == "moved" })].fields = []string{"spec.template.image"}
	}
	if cfg.removed > 0 && gen == cfg.removed {
		hs = slices.DeleteFunc(hs, func(h simHandler) bool { return h.id == "verdict" }) // rule 19
	}
	return hs
}

// simVariants returns every form a handler takes in some generation: a
// state observed by one bus may be handled by the next (pending states).
func simVariants(cfg simConfig) []simHandler {
	var out []simHandler
	seen := map[string]bool{}
	for gen := range max(cfg.revisionBumps, cfg.fieldSwap, cfg.removed+1) + 1 {
		for _, h := range simHandlers(cfg, gen) {
			id := fmt.Sprint(h.id, h.fields, h.revision)
			if !seen[id] {
				seen[id] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// without returns doc less the paths of map keys paths, copying the maps
// on their way.
func without(doc map[string]any, paths []string) map[string]any {
	for _, p := range paths {
		keys := strings.Split(p, ".")
		out := maps.Clone(doc)
		m := out
		for i, k := range keys {
			if i == len(keys)-1 {
				delete(m, k)
				break
			}
			next, ok := m[k].(map[string]any)
			if !ok {
				break
			}
			next = maps.Clone(next)
			m[k] = next
			m = next
		}
		doc = out
	}
	return doc
}

func (h simHandler) wants(t EventType) bool {
	if len(h.types) == 0 {
		return t == Create || t == Update
	}
	return slices.Contains(h.types, t)
}

// canon writes the canonical text of a JSON-like value: maps by sorted key,
// numbers by value (an integer-valued float below 2^53 reads as the
// integer; beyond that a float is not the integer it came from), strings
// byte for byte (strconv.Quote keeps invalid UTF-8 visible), and, with list
// keys, keyed lists in key order unless a key is missing or repeated
// (rule 3, CompareOptions.ListKeys). ignored tells the paths left out.
func canon(b *strings.Builder, v any, path string, listKeys bool) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case int:
		fmt.Fprintf(b, "i%d", x)
	case int64:
		fmt.Fprintf(b, "i%d", x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			fmt.Fprintf(b, "i%d", int64(x))
		} else {
			fmt.Fprintf(b, "f%v", x)
		}
	case map[string]any:
		b.WriteByte('{')
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if simIgnored(p) {
				continue
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			canon(b, x[k], p, listKeys)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case []any:
		order := make([]int, len(x))
		for i := range order {
			order[i] = i
		}
		last := path[strings.LastIndexByte(path, '.')+1:]
		if field, ok := simListKeys[last]; ok && listKeys {
			if keys, ok := elementKeys(x, field); ok {
				slices.SortFunc(order, func(i, j int) int { return strings.Compare(keys[i], keys[j]) })
			}
		}
		b.WriteByte('[')
		for _, i := range order {
			canon(b, x[i], path+"[]", listKeys)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "?%T(%v)", v, v)
	}
}

// simIgnored reports the paths no handler sees: defaultIgnore and simIgnore.
func simIgnored(p string) bool {
	for _, q := range append(slices.Clone(defaultIgnore), simIgnore...) {
		if p == q {
			return true
		}
	}
	return false
}

// elementKeys returns the key of every element of a keyed list, and false
// when one lacks it or two share it: such a list is compared by index.
func elementKeys(l []any, field string) ([]string, bool) {
	keys := make([]string, len(l))
	seen := map[string]bool{}
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		s, ok := m[field].(string)
		if !ok || seen[s] {
			return nil, false
		}
		seen[s] = true
		keys[i] = s
	}
	return keys, true
}

// view is a handler's value (the words of docs/semantics.md): its revision,
// then for each field what is there. CHOICE: an index path ([0]) addresses
// the element at that position in document order even with list keys, so a
// reordering that brings another element first is a change for it; an
// element-key path ([name=app]) addresses the first element with that key
// when the key is repeated; a wildcard ([*]) over a list with usable keys is
// the set of key → value, so a reordering is no change, and otherwise the
// sequence of values by position.
func view(h simHandler, doc map[string]any, listKeys bool) string {
	var b strings.Builder
	b.WriteString("rev=" + h.revision + ";")
	if len(h.writes) > 0 {
		// Rule 5a: what the handler writes is not part of its value.
		b.WriteString("writes=" + strings.Join(h.writes, ",") + ";")
		doc = without(doc, h.writes)
	}
	if len(h.fields) == 0 {
		canon(&b, doc, "", listKeys)
		return b.String()
	}
	for _, f := range h.fields {
		b.WriteString(f + "=")
		p := MustParsePath(f)
		if !strings.Contains(f, "[*]") {
			if v, ok := lookup(doc, p); ok {
				canon(&b, v, f, listKeys)
			} else {
				b.WriteString("absent")
			}
			b.WriteByte(';')
			continue
		}
		if f == "spec.selector[*]" {
			// A map: the set of key → value.
			v, _ := lookup(doc, MustParsePath("spec.selector"))
			m, _ := v.(map[string]any)
			var parts []string
			for k, v := range m {
				var vb strings.Builder
				canon(&vb, v, "", listKeys)
				parts = append(parts, strconv.Quote(k)+":"+vb.String())
			}
			slices.Sort(parts)
			b.WriteString(strings.Join(parts, ",") + ";")
			continue
		}
		// The other pattern used: status.conditions[*].status.
		l, _ := lookup(doc, MustParsePath("status.conditions"))
		list, _ := l.([]any)
		keys, keyed := elementKeys(list, "type")
		keyed = keyed && listKeys
		var parts []string
		for i, e := range list {
			m, _ := e.(map[string]any)
			v, ok := m["status"]
			if !ok {
				continue
			}
			var vb strings.Builder
			canon(&vb, v, "", listKeys)
			at := strconv.Itoa(i)
			if keyed {
				at = strconv.Quote(keys[i])
			}
			parts = append(parts, at+":"+vb.String())
		}
		if keyed {
			slices.Sort(parts)
		}
		b.WriteString(strings.Join(parts, ",") + ";")
	}
	return b.String()
}

// deletedView is the value of a delete handler: the deletion itself.
const deletedView = "deleted"

// mix hashes its arguments: every behaviour of the simulated user code is
// a function of it, so that the model can predict it.
func mix(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// behaviour is what a handler does with one value.
type behaviour struct {
	kind     int // one of the be* constants
	failures int // attempts that fail before the first success
	delay    time.Duration
}

const (
	beSucceed    = iota
	beFail       // fails `failures` times with a plain error, then succeeds
	bePanic      // panics `failures` times, then succeeds
	beRetryAfter // returns RetryAfter(delay) `failures` times, then succeeds
	bePermanent  // returns Permanent every time
	beBadLevel   // returns a status of a level that does not exist every time
)

// behaviourOf returns what handler id does with the value v of key.
func behaviourOf(id, key, v string) behaviour {
	h := mix("behaviour", id, key, v)
	n := int(h/64%3) + 1
	d := time.Duration(h/256%4+1) * 50 * time.Millisecond
	switch id {
	case "verdict":
		return behaviour{kind: beSucceed}
	case "create", "resume":
		if h%4 == 0 {
			return behaviour{kind: beFail, failures: n}
		}
		return behaviour{kind: beSucceed}
	}
	switch r := h % 20; {
	case r < 10:
		return behaviour{kind: beSucceed}
	case r < 13:
		return behaviour{kind: beFail, failures: n}
	case r < 15:
		return behaviour{kind: bePanic, failures: n}
	case r < 17:
		return behaviour{kind: beRetryAfter, failures: n, delay: d}
	case r < 18:
		return behaviour{kind: bePermanent}
	case r == 18 && id == "spec" && h/8192%4 == 0 && !simSkip["badlevel"]:
		// Rare, so that the other rules get their turn: on the engine of
		// this branch a bad level spoils every later save.
		return behaviour{kind: beBadLevel}
	}
	return behaviour{kind: beSucceed}
}

// successStatus is the status handler id returns when it succeeds on v.
// The resume handler clears its slot.
func successStatus(id, key, v string) Status {
	if id == "resume" {
		return Status{}
	}
	h := mix("status", id, key, v)
	if id == "verdict" {
		return Blocked(fmt.Sprintf("%s %x", id, h>>40))
	}
	levels := []Level{LevelActive, LevelWaiting, LevelMaintenance, LevelBlocked}
	st := Status{Level: levels[h%4], Message: fmt.Sprintf("%s %x", id, h>>40)}
	if h>>8%3 == 0 {
		st = st.WithReason(fmt.Sprintf("Sim%X", h>>56)) // reasons are kept, compared and summarised too
	}
	return st
}

// errSim is the error simulated handlers fail with.
var errSim = errors.New("simulated failure")

// whenVerdict is the gated handler's On.When on a value: refuse when
// spec.replicas is a multiple of 5, panic when it is 3 modulo 7.
func whenVerdict(doc map[string]any) (ok, panics bool) {
	r := replicasOf(doc)
	return r%5 != 0, r%7 == 3
}

// collectStatus is the collector's status for a live object; it panics when
// spec.replicas is 4 modulo 11 (the slot then shows an error).
func collectStatus(doc map[string]any) (Status, bool) {
	r := replicasOf(doc)
	if r%11 == 4 {
		return Status{}, true
	}
	return Active(fmt.Sprintf("replicas %d", r)), false
}

func replicasOf(doc map[string]any) int64 {
	v, _ := lookup(doc, MustParsePath("spec.replicas"))
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return -1
}

// modelKey is what the model knows of one key.
type modelKey struct {
	doc   map[string]any // the latest observed state; nil when gone
	epoch int            // the incarnation of doc, or of the last one
	// ended lists the incarnations whose deletion was observed: each of
	// their delete handlers must succeed once or fail permanently.
	ended []int
	// seenGen is the bus generation that last observed the live
	// incarnation.
	seenGen int
	// endedBy maps an incarnation to the one whose deletion its first
	// observation required.
	endedBy map[int]int
	// values lists, per incarnation and handler, every value observed.
	values map[int]map[string]map[string]bool
}

// model is the sequential reference.
type model struct {
	cfg  simConfig
	keys map[string]*modelKey
}

func newModel(cfg simConfig) *model { return &model{cfg: cfg, keys: map[string]*modelKey{}} }

func (m *model) key(k string) *modelKey {
	mk := m.keys[k]
	if mk == nil {
		mk = &modelKey{values: map[int]map[string]map[string]bool{}}
		m.keys[k] = mk
	}
	return mk
}

// observe applies an observed state. epoch is the incarnation the harness
// gave it: with Options.Incarnation a new uid is a new incarnation, and
// the current one ends as a deletion (rule 12, Options.Incarnation);
// without it only deletions separate incarnations, so the harness keeps the
// epoch across a change of uid.
func (m *model) observe(k string, doc map[string]any, epoch int, gen int) {
	mk := m.key(k)
	if mk.doc != nil && epoch != mk.epoch && mk.seenGen == gen {
		// A new incarnation replaces one this bus has seen: the bus
		// deletes the old one first. (Rule 14: one it has not seen, from
		// a record of an earlier run, is set aside, its deletion not
		// observed; the bus may still delete it from pending states.)
		mk.ended = append(mk.ended, mk.epoch)
		if mk.endedBy == nil {
			mk.endedBy = map[int]int{}
		}
		mk.endedBy[epoch] = mk.epoch
	}
	mk.doc, mk.epoch, mk.seenGen = doc, epoch, gen
	vals := mk.values[epoch]
	if vals == nil {
		vals = map[string]map[string]bool{}
		mk.values[epoch] = vals
	}
	for _, h := range simVariants(m.cfg) {
		if vals[h.id] == nil {
			vals[h.id] = map[string]bool{}
		}
		vals[h.id][view(h, doc, m.cfg.listKeys)] = true
	}
}

// refused undoes the deletion that the first observation of epoch
// required, when the bus refused that observation (Dispatch answered
// ErrClosed): the next bus gets it without having seen the old
// incarnation, which rule 14 sets aside.
func (m *model) refused(k string, epoch int) {
	mk := m.key(k)
	old, ok := mk.endedBy[epoch]
	if !ok {
		return
	}
	delete(mk.endedBy, epoch)
	if i := slices.Index(mk.ended, old); i >= 0 {
		mk.ended = slices.Delete(mk.ended, i, i+1)
	}
}

// observeDelete applies an observed deletion.
func (m *model) observeDelete(k string) {
	mk := m.key(k)
	if mk.doc == nil {
		return // nothing to delete: the bus is told of a deletion it never saw
	}
	mk.ended = append(mk.ended, mk.epoch)
	mk.doc = nil
}

// expectSlot is what a slot must hold at quiescence.
type expectSlot struct {
	dontCare  bool // the contract leaves it to timing
	errorOnly bool // any status at LevelError
	status    Status
}

// expectHandler is what a handler must have done for the live incarnation.
type expectHandler struct {
	value string // the value it must have handled last; "" for any
}

// expected returns, for a live key, what each handler and slot must show;
// nil for a key that is gone (no slots, no record).
func (m *model) expected(k string, gen int) (map[string]expectHandler, map[string]expectSlot) {
	mk := m.keys[k]
	if mk == nil || mk.doc == nil {
		return nil, nil
	}
	hs := map[string]expectHandler{}
	slots := map[string]expectSlot{}
	for _, h := range simHandlers(m.cfg, gen) {
		v := view(h, mk.doc, m.cfg.listKeys)
		switch {
		case h.id == "resume":
			// A resume handler clears its slot when it succeeds, and is
			// retried until it does (rule 18): no slot at quiescence.
			slots[h.id] = expectSlot{status: Status{}}
			continue
		case h.wants(Delete):
			continue
		case h.id == "create":
			// CHOICE: a create-only handler runs on the first value of
			// the incarnation that a pass sees; which one depends on
			// coalescing, so the harness checks that it succeeded once
			// and shows the status of that success.
			hs[h.id] = expectHandler{}
			slots[h.id] = expectSlot{dontCare: true}
			continue
		}
		if h.gated {
			ok, panics := whenVerdict(mk.doc)
			if panics || !ok {
				// Refused: nothing runs, nothing commits; the slot is
				// whatever the last pass left. A panic is the handler's
				// error (rule 8), retried for ever.
				es := expectSlot{dontCare: true}
				if panics && simWhenPanicsUnderRun {
					es = expectSlot{errorOnly: true}
				}
				slots[h.id] = es
				continue
			}
		}
		switch be := behaviourOf(h.id, k, v); be.kind {
		case bePermanent, beBadLevel:
			// Never handled; an error shows (rules 7 and 9).
			slots[h.id] = expectSlot{errorOnly: true}
		default:
			hs[h.id] = expectHandler{value: v}
			slots[h.id] = expectSlot{status: successStatus(h.id, k, v)}
		}
	}
	if m.cfg.removed > 0 && gen == m.cfg.removed {
		// CHOICE: the slot of a handler no longer registered goes at the
		// object's next commit (rule 19); whether one came since the
		// restart depends on timing.
		slots["verdict"] = expectSlot{dontCare: true}
	}
	if st, panics := collectStatus(mk.doc); panics {
		slots["coll"] = expectSlot{errorOnly: true}
	} else {
		slots["coll"] = expectSlot{status: st}
	}
	return hs, slots
}

// deleteMustFinish reports whether the deletion of every ended incarnation
// of k must have run each delete handler (success or permanent failure).
func (m *model) endedEpochs(k string) []int {
	if mk := m.keys[k]; mk != nil {
		return mk.ended
	}
	return nil
}

// observedValue reports whether v was observed as handler id's value in
// incarnation epoch of k: no handler may succeed on anything else.
func (m *model) observedValue(k string, epoch int, id, v string) bool {
	mk := m.keys[k]
	if mk == nil {
		return false
	}
	// The revision is the handler's, not the state's: a state observed
	// under one revision is handled under the next after a restart.
	strip := func(x string) string {
		if i := strings.Index(x, ";"); strings.HasPrefix(x, "rev=") && i >= 0 {
			return x[i+1:]
		}
		return x
	}
	for seen := range mk.values[epoch][id] {
		if strip(seen) == strip(v) {
			return true
		}
	}
	return false
}
