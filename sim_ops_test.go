package opbus

// The operations of TestSimulation: what they are, how they are drawn from
// a seed, how they change an object, and how they print.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// simConfig is what one sequence's buses are built with.
type simConfig struct {
	listKeys      bool // Options.ListKeys = simListKeys
	incarnation   bool // Options.Incarnation returns metadata.uid
	maxBacklog    int  // Options.MaxBacklog; 0 for the default
	workers       int
	writers       int // Options.Writers: 1 with an even count of workers, else the default
	fileStore     bool
	keys          int  // objects, 2–4
	revisionBumps int  // from this generation of bus on, the spec handler's revision is r2; 0: never
	fieldSwap     int  // from this generation on, handler moved reads spec.template.image, not spec.image; 0: never
	removed       int  // the bus of this generation lacks handler verdict (an upgrade), the next has it again (a rollback); 0: never
	longNames     bool // odd keys have 253-character names
	// fieldsOnly leaves out handler whole, so that every handler that
	// takes changes names fields and passes compare only the subscribed
	// subtrees (rule 5b). Derived from keys, not drawn, so that the seeds
	// of recorded findings replay the same operations.
	fieldsOnly bool
	// pipeline makes every write of Run's passes run beside the next
	// pass of its key (rule 22c), as slow stores do. Derived, as
	// fieldsOnly is.
	pipeline bool
}

func (c simConfig) String() string {
	return fmt.Sprintf("listKeys=%v incarnation=%v maxBacklog=%d workers=%d writers=%d fileStore=%v keys=%d revisionBump=%d fieldSwap=%d removed=%d longNames=%v fieldsOnly=%v pipeline=%v",
		c.listKeys, c.incarnation, c.maxBacklog, c.workers, c.writers, c.fileStore, c.keys, c.revisionBumps, c.fieldSwap, c.removed, c.longNames, c.fieldsOnly, c.pipeline)
}

// relists reports whether the bus of generation gen starts with the source
// observing every live object again: it does when the handlers changed, as
// an operator upgraded or rolled back lists its objects when it starts.
func (c simConfig) relists(gen int) bool {
	return gen > 0 && (gen == c.revisionBumps || gen == c.fieldSwap || gen == c.removed || gen == c.removed+1)
}

// name is the object name of key index k: with long names, odd keys have
// the longest name Kubernetes allows.
func (c simConfig) name(k int) string {
	n := fmt.Sprintf("k%d", k)
	if c.longNames && k%2 == 1 {
		n += "-" + strings.Repeat("x", 253-len(n)-1)
	}
	return n
}

func (c simConfig) key(k int) Key { return Key{Kind: "Pod", Namespace: "sim", Name: c.name(k)} }

type opKind int

const (
	opCreate  opKind = iota // observe a new object (or a new incarnation) with uid n
	opUpdate                // change a field: field, to a value derived from n
	opDelete                // observe the deletion, with the last state
	opRestart               // stop Run, build a new Bus on the same store, start Run
	opFault                 // the store fails its next n calls of one kind for the key
	opSettle                // synctest.Wait: let every goroutine run until blocked
	opSleep                 // advance fake time by n milliseconds
	opBurst                 // observe, without pause, updates, the deletion and a new incarnation (uid n), then an update
	opBad                   // observe a document the bus must refuse: nil (n even) or containing itself (n odd)
)

// simOp is one operation. It carries everything it needs, so that any
// subsequence of a sequence is a sequence too (for shrinking).
type simOp struct {
	kind     opKind
	key      int
	field    string // opUpdate: the mutation; opFault: load, save, delete or corrupt
	n        int64
	dispatch bool // an observation made with Dispatch/DispatchDelete, concurrently with Run
	relist   bool // opRestart: the source observes every live object again on start
	block    bool // opRestart: a handler ignores its context past ShutdownTimeout first
	burst    bool // opRestart: then a burst (opBurst, uid n) queues behind the blocked handler
}

func (o simOp) String() string {
	via := "observe"
	if o.dispatch {
		via = "dispatch"
	}
	k := fmt.Sprintf("k%d", o.key)
	switch o.kind {
	case opCreate:
		return fmt.Sprintf("%s %s create uid=u%d", via, k, o.n)
	case opUpdate:
		return fmt.Sprintf("%s %s update %s n=%d", via, k, o.field, o.n)
	case opDelete:
		return fmt.Sprintf("%s %s delete", via, k)
	case opRestart:
		if o.burst {
			return fmt.Sprintf("restart relist=%v block=%v (blocking handler on %s, then a burst to uid=u%d)", o.relist, o.block, k, o.n)
		}
		return fmt.Sprintf("restart relist=%v block=%v (blocking handler on %s)", o.relist, o.block, k)
	case opBurst:
		return fmt.Sprintf("%s %s burst: %s", via, k, strings.Join(burstOps(o.key, o.n, o.dispatch), ", "))
	case opBad:
		if o.n%2 == 0 {
			return fmt.Sprintf("%s %s nil document", via, k)
		}
		return fmt.Sprintf("%s %s document containing itself", via, k)
	case opFault:
		return fmt.Sprintf("store %s: next %d %s fail", k, o.n, o.field)
	case opSettle:
		return "settle"
	case opSleep:
		return fmt.Sprintf("sleep %v", time.Duration(o.n)*time.Millisecond)
	}
	return "?"
}

func formatOps(ops []simOp) string {
	var b strings.Builder
	for i, o := range ops {
		fmt.Fprintf(&b, "  %2d. %v\n", i+1, o)
	}
	return b.String()
}

var simFields = []string{"replicas", "image", "big", "c0image", "appstate", "sidestate", "cond", "noise", "reorder", "dup", "selector"}

// burst returns the observations of a burst, uid its new incarnation's:
// two to four updates, the deletion, the new incarnation, an update. Only
// the last may be made with Dispatch (a caller that waits for nothing
// before).
func burst(k int, uid int64, dispatch bool) []simOp {
	var ops []simOp
	h := mix("burst", strconv.FormatInt(uid, 10))
	for i := range 2 + int(h%3) {
		ops = append(ops, simOp{kind: opUpdate, key: k, field: simFields[int(h>>(8*i+4))%len(simFields)], n: int64(h>>(8*i+2)) % 1000})
	}
	ops = append(ops, simOp{kind: opDelete, key: k}, simOp{kind: opCreate, key: k, n: uid},
		simOp{kind: opUpdate, key: k, field: "replicas", n: int64(h>>50) % 1000, dispatch: dispatch})
	return ops
}

func burstOps(k int, uid int64, dispatch bool) []string {
	var out []string
	for _, o := range burst(k, uid, dispatch) {
		out = append(out, strings.SplitN(o.String(), " ", 3)[2]) // less "observe kN"
	}
	return out
}

// genConfig draws a configuration.
func genConfig(r *rand.Rand) simConfig {
	c := simConfig{
		listKeys:    r.IntN(2) == 0,
		incarnation: r.IntN(5) < 3,
		workers:     1 + r.IntN(4),
		fileStore:   r.IntN(4) == 0,
		keys:        2 + r.IntN(3),
	}
	if r.IntN(2) == 0 {
		c.maxBacklog = 2 + r.IntN(2)
	}
	if r.IntN(4) == 0 {
		c.revisionBumps = 1 + r.IntN(2)
	}
	if r.IntN(4) == 0 {
		c.fieldSwap = 1 + r.IntN(2)
	}
	if r.IntN(4) == 0 {
		c.removed = 1 + r.IntN(2)
	}
	c.longNames = c.fileStore && r.IntN(2) == 0
	c.fieldsOnly = c.keys == 3
	c.pipeline = c.listKeys != c.fileStore
	if c.workers%2 == 0 {
		c.writers = 1 // derived, as fieldsOnly is: one write at a time behind several workers
	}
	return c
}

// genOps draws n operations.
func genOps(r *rand.Rand, cfg simConfig, n int) []simOp {
	var ops []simOp
	uid := int64(0)
	alive := make([]bool, cfg.keys)
	for len(ops) < n {
		k := r.IntN(cfg.keys)
		o := simOp{key: k, dispatch: r.IntN(6) == 0}
		switch w := r.IntN(100); {
		case !alive[k] || w < 8:
			uid++
			o.kind, o.n = opCreate, uid
			alive[k] = true
		case w < 55:
			o.kind, o.field, o.n = opUpdate, simFields[r.IntN(len(simFields))], r.Int64N(1000)
		case w < 64:
			o.kind = opDelete
			alive[k] = false
		case w < 68:
			o = simOp{kind: opRestart, key: k, relist: r.IntN(2) == 0, block: r.IntN(4) == 0}
			if o.block && alive[k] && r.IntN(2) == 0 {
				uid++
				o.burst, o.n = true, uid
			}
		case w < 70:
			uid++
			o = simOp{kind: opBurst, key: k, n: uid, dispatch: o.dispatch}
			alive[k] = true
		case w < 71:
			o = simOp{kind: opBad, key: k, n: r.Int64N(2), dispatch: o.dispatch}
		case w < 75:
			o = simOp{kind: opFault, key: k, field: []string{"load", "save", "delete", "corrupt"}[r.IntN(4)], n: 1 + r.Int64N(2)}
		case w < 90:
			o = simOp{kind: opSettle}
		default:
			o = simOp{kind: opSleep, n: []int64{1, 5, 30, 120, 700}[r.IntN(5)]}
		}
		ops = append(ops, o)
	}
	return ops
}

// baseDoc is a new object named name.
func baseDoc(name string, uid int64) map[string]any {
	el := func(kv ...string) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name": name, "uid": fmt.Sprintf("u%d", uid), "resourceVersion": "1",
			"labels": map[string]any{"noise": "0"},
		},
		"spec": map[string]any{
			"replicas": int64(1), "image": "img:1", "big": int64(1<<60 + 1),
			"containers": []any{el("name", "app", "image", "a:1"), el("name", "side", "image", "s:1")},
			"template":   map[string]any{"image": "img:1"},
			"selector":   selectors(0),
		},
		"status": map[string]any{
			"containerStatuses": []any{el("name", "app", "state", "waiting"), el("name", "side", "state", "waiting")},
			"conditions":        []any{el("type", "Ready", "status", "False"), el("type", "Synced", "status", "False")},
		},
	}
}

// selectors returns one of the values of spec.selector, a map read with
// [*]: keys hold NUL and other bytes, and the first two differ only in
// where a key ends and its value begins.
func selectors(n int64) map[string]any {
	switch n % 4 {
	case 0:
		return map[string]any{"a": "xy\x00n"}
	case 1:
		return map[string]any{"a\x00s\x04xy": nil}
	case 2:
		return map[string]any{"app": "web", "tier\x00\xff": "x"}
	}
	return map[string]any{"app": "web", "tier": "\x00\xffx"}
}

// simClone copies maps and lists; the bus keeps a reference to what it is
// given, so every state is a new document.
func simClone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = simClone(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = simClone(e)
		}
		return l
	}
	return v
}

// typedDoc returns doc with some of its values in the Go types a caller
// may build a document with and the door converts (rule 20): the labels as
// a map[string]string, conditions whose fields are all strings as a
// []map[string]string, a replicas count as an int32, the selector as a
// map[string]*string. The bus must take it as doc itself. doc is not
// modified.
func typedDoc(doc map[string]any) map[string]any {
	out := maps.Clone(doc)
	if md, ok := doc["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		if l, ok := stringMap(md["labels"]); ok {
			md["labels"] = l
		}
		out["metadata"] = md
	}
	if spec, ok := doc["spec"].(map[string]any); ok {
		spec = maps.Clone(spec)
		switch n := spec["replicas"].(type) {
		case int:
			spec["replicas"] = int32(n)
		case int64:
			spec["replicas"] = int32(n)
		}
		if sel, ok := spec["selector"].(map[string]any); ok {
			ptrs := make(map[string]*string, len(sel))
			for k, v := range sel {
				if s, ok := v.(string); ok {
					ptrs[k] = &s
				} else if v == nil {
					ptrs[k] = nil
				} else {
					ptrs = nil
					break
				}
			}
			if ptrs != nil {
				spec["selector"] = ptrs
			}
		}
		out["spec"] = spec
	}
	if status, ok := doc["status"].(map[string]any); ok {
		if conds, ok := status["conditions"].([]any); ok {
			typed := make([]map[string]string, 0, len(conds))
			for _, c := range conds {
				if m, ok := stringMap(c); ok {
					typed = append(typed, m)
				}
			}
			if len(typed) == len(conds) {
				status = maps.Clone(status)
				status["conditions"] = typed
				out["status"] = status
			}
		}
	}
	return out
}

// stringMap returns v as a map[string]string if it is a map of strings.
func stringMap(v any) (map[string]string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out[k] = s
	}
	return out, true
}

// mutate returns doc changed as the update operation o says.
func mutate(doc map[string]any, o simOp, rv int64) map[string]any {
	doc = simClone(doc).(map[string]any)
	md := doc["metadata"].(map[string]any)
	md["resourceVersion"] = fmt.Sprint(rv)
	spec := doc["spec"].(map[string]any)
	status := doc["status"].(map[string]any)
	n := o.n
	named := func(list []any, name string) map[string]any {
		for _, e := range list {
			if m := e.(map[string]any); m["name"] == name {
				return m
			}
		}
		return map[string]any{}
	}
	states := []string{"waiting", "running", "terminated"}
	switch o.field {
	case "replicas":
		spec["replicas"] = n % 16
	case "image":
		spec["image"] = fmt.Sprintf("img:%d", n%7)
		if n%5 == 0 {
			spec["image"] = fmt.Sprintf("img:\xff%d", n%3) // invalid UTF-8
		}
		spec["template"] = map[string]any{"image": spec["image"]} // a copy, as a controller keeps one
	case "selector":
		spec["selector"] = selectors(n)
	case "big":
		spec["big"] = int64(1<<60 + n%4) // beyond 2^53: float64 would lose it
	case "c0image":
		spec["containers"].([]any)[0].(map[string]any)["image"] = fmt.Sprintf("a:%d", n%4)
	case "appstate":
		named(status["containerStatuses"].([]any), "app")["state"] = states[n%3]
	case "sidestate":
		named(status["containerStatuses"].([]any), "side")["state"] = states[n%3]
	case "cond":
		l := status["conditions"].([]any)
		l[int(n)%len(l)].(map[string]any)["status"] = []string{"True", "False", "Unknown"}[n%3]
	case "noise":
		md["labels"].(map[string]any)["noise"] = fmt.Sprint(n)
	case "reorder":
		var l []any
		switch n % 3 {
		case 0:
			l = spec["containers"].([]any)
		case 1:
			l = status["containerStatuses"].([]any)
		default:
			l = status["conditions"].([]any)
		}
		for i, j := 0, len(l)-1; i < j; i, j = i+1, j-1 {
			l[i], l[j] = l[j], l[i]
		}
	case "dup":
		// Toggle a duplicate key in a keyed list.
		field, list, key := "name", "containerStatuses", "app"
		if n%2 == 1 {
			field, list, key = "type", "conditions", "Ready"
		}
		l := status[list].([]any)
		count := 0
		for _, e := range l {
			if e.(map[string]any)[field] == key {
				count++
			}
		}
		if count > 1 {
			out := l[:0]
			seen := false
			for _, e := range l {
				if e.(map[string]any)[field] == key {
					if seen {
						continue
					}
					seen = true
				}
				out = append(out, e)
			}
			status[list] = out
		} else {
			other := "state"
			if list == "conditions" {
				other = "status"
			}
			status[list] = append(l, map[string]any{field: key, other: fmt.Sprintf("dup%d", n%3)})
		}
	}
	return doc
}
