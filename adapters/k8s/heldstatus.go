package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opbus/opbus"
)

// A handler's [Client.ApplyStatus] on a kind whose statuses are conditions
// is held until the pass that ran the handler writes, so that the
// handler's status fields and the conditions that say what it made of
// them land in one write (the status subresource), at one resource
// version: a client that sees the fields sees the conditions of the same
// pass. The held fields go with the pass's conditions when it writes
// them (PutStatus), alone when the pass writes its record and no status,
// and alone soon after the handler returned when the pass writes nothing
// (a due run whose status did not change, whose conditions are already
// right).

// heldStatus is one handler's status fields waiting for its pass's write.
type heldStatus struct {
	handler string
	self    appliedKey
	uid     string
	status  map[string]any // without nulls
	data    string         // what unchanged and sent compare
	gen     int64          // the generation and resource version of the
	rv      string         // state the handler ran on
	done    bool           // the handler has returned
	seq     uint64         // the order in which statuses were held
}

// heldStatuses is what the sink holds, by object.
type heldStatuses struct {
	mu     sync.Mutex
	by     map[opbus.Key]map[string]*heldStatus // by field manager
	status map[opbus.Key]bool                   // SaveStatus said a status write follows the record's
	timers map[opbus.Key]*time.Timer
	seq    uint64
	// written is, by object and field manager, the seq of the newest
	// status that landed: an older one still being written (a write
	// alone that met a conflict, one given back after a failure) is
	// dropped instead of undoing it. Forgotten with the object.
	written map[opbus.Key]map[string]uint64
}

// heldWait is how long after its handler returned a held status waits
// for its pass's write before it is written alone.
const heldWait = 100 * time.Millisecond

// hold keeps h for the next write of key, replacing what the same
// manager held.
func (sk *sink) hold(key opbus.Key, h *heldStatus) {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	if sk.held.by == nil {
		sk.held.by = map[opbus.Key]map[string]*heldStatus{}
	}
	if sk.held.by[key] == nil {
		sk.held.by[key] = map[string]*heldStatus{}
	}
	sk.held.seq++
	h.seq = sk.held.seq
	sk.held.by[key][h.self.manager] = h
	// Until it lands, what the manager applied last is not what the
	// object will show: an apply of what it shows now is not skipped.
	sk.s.forgetSent(h.self)
}

// superseded reports whether a status of h's manager newer than h has
// landed on key.
func (sk *sink) superseded(key opbus.Key, h *heldStatus) bool {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	return sk.held.written[key][h.self.manager] > h.seq
}

// landed notes that h was written to key.
func (sk *sink) landed(key opbus.Key, h *heldStatus) {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	if sk.held.written == nil {
		sk.held.written = map[opbus.Key]map[string]uint64{}
	}
	if sk.held.written[key] == nil {
		sk.held.written[key] = map[string]uint64{}
	}
	if h.seq > sk.held.written[key][h.self.manager] {
		sk.held.written[key][h.self.manager] = h.seq
	}
}

// landedSeq returns the seq of the newest status of manager that landed
// on key.
func (sk *sink) landedSeq(key opbus.Key, manager string) uint64 {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	return sk.held.written[key][manager]
}

// forgetHeld drops what the sink keeps of key, which is gone.
func (sk *sink) forgetHeld(key opbus.Key) {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	delete(sk.held.written, key)
}

// unhold drops what manager holds for key.
func (sk *sink) unhold(key opbus.Key, manager string) {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	delete(sk.held.by[key], manager)
}

// handled notes that handler returned on key: what it holds may go alone
// if its pass writes nothing.
func (sk *sink) handled(key opbus.Key, handler string) {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	found := false
	for _, h := range sk.held.by[key] {
		if h.handler == handler {
			h.done, found = true, true
		}
	}
	if !found || sk.held.timers[key] != nil {
		return
	}
	if sk.held.timers == nil {
		sk.held.timers = map[opbus.Key]*time.Timer{}
	}
	sk.held.timers[key] = time.AfterFunc(heldWait, func() { sk.flushAlone(key) })
}

// take returns and forgets what key holds, in field manager order, and
// stops its timer.
func (sk *sink) take(key opbus.Key) []*heldStatus {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	if t := sk.held.timers[key]; t != nil {
		t.Stop()
		delete(sk.held.timers, key)
	}
	m := sk.held.by[key]
	delete(sk.held.by, key)
	var out []*heldStatus
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// takeFor returns and forgets what key holds for a write of the
// conditions of the state obj: the statuses of handlers that ran on that
// state or an earlier one. A later pass's handler may run while an
// earlier pass still writes (core rule 22c); its fields wait for its own
// pass's conditions.
func (sk *sink) takeFor(key opbus.Key, obj map[string]any) []*heldStatus {
	gen, rv := generation(obj), resourceVersion(obj)
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	m := sk.held.by[key]
	var out []*heldStatus
	for _, k := range slices.Sorted(maps.Keys(m)) {
		h := m[k]
		if h.gen > gen || rv != "" && h.rv != "" && olderThan(rv, h.rv) {
			continue
		}
		out = append(out, h)
		delete(m, k)
	}
	if len(m) == 0 {
		delete(sk.held.by, key)
		if t := sk.held.timers[key]; t != nil {
			t.Stop()
			delete(sk.held.timers, key)
		}
	}
	return out
}

// giveBack holds hs again after a write of them failed, unless a newer
// status of the same manager is held; a later write of key takes them.
func (sk *sink) giveBack(key opbus.Key, hs []*heldStatus) {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	for _, h := range hs {
		if sk.held.by == nil {
			sk.held.by = map[opbus.Key]map[string]*heldStatus{}
		}
		if sk.held.by[key] == nil {
			sk.held.by[key] = map[string]*heldStatus{}
		}
		if _, newer := sk.held.by[key][h.self.manager]; !newer && sk.held.written[key][h.self.manager] < h.seq {
			sk.held.by[key][h.self.manager] = h
		}
	}
}

// statusFollows notes, from SaveStatus, that the bus writes key's status
// after its record: the record's write leaves what key holds to it.
func (sk *sink) statusFollows(key opbus.Key) {
	sk.held.mu.Lock()
	defer sk.held.mu.Unlock()
	if sk.held.status == nil {
		sk.held.status = map[opbus.Key]bool{}
	}
	sk.held.status[key] = true
}

// recordWritten is called after the store wrote key's record: unless a
// status write follows, what key holds is written now, alone.
func (sk *sink) recordWritten(ctx context.Context, key opbus.Key) {
	sk.held.mu.Lock()
	follows := sk.held.status[key]
	delete(sk.held.status, key)
	n := len(sk.held.by[key])
	sk.held.mu.Unlock()
	if !follows && n > 0 {
		sk.flush(ctx, key)
	}
}

// flushAlone writes what key holds whose handler returned, when its pass
// wrote nothing; it runs on a timer, and writes nothing once the lead
// has ended (its context is the lead's).
func (sk *sink) flushAlone(key opbus.Key) {
	sk.held.mu.Lock()
	delete(sk.held.timers, key)
	sk.held.mu.Unlock()
	sk.s.mu.Lock()
	w := sk.s.watch
	sk.s.mu.Unlock()
	if w == nil || w.ctx.Err() != nil {
		sk.take(key) // the lead has ended: nothing more is written
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	sk.flush(ctx, key)
}

// flush writes what key holds with the conditions as they are.
func (sk *sink) flush(ctx context.Context, key opbus.Key) {
	r, err := sk.s.resourceFor(key)
	if err != nil {
		return
	}
	hs := sk.take(key)
	if len(hs) == 0 {
		return
	}
	var cur *unstructured.Unstructured
	if u, ok := r.cached(key); ok && !sk.s.store.ahead(key, u.GetResourceVersion()) {
		cur = u
	}
	_, err = sk.applyHeld(ctx, r, key, cur, hs, nil)
	if err != nil && !errors.Is(err, errGone) && !apierrors.IsNotFound(err) {
		sk.s.log.Error("k8s: writing a handler's status", "key", key.String(), "err", err)
		sk.giveBack(key, hs)
		sk.s.refused(ctx, r, key, ReasonStatusRefused, err)
	}
}

// applyHeld writes the held statuses hs of key, each by a server-side
// apply of the status subresource under its handler's field manager, at
// the resource version of cur (read when nil): its fields, and
// status.conditions as merge makes them from the object (as found, for a
// nil merge: a handler's apply holds the conditions, which it may own
// since an earlier one, so that it never drops them). On a conflict it
// reads the object and tries again, a few times. It returns the object as
// the last write left it.
func (sk *sink) applyHeld(ctx context.Context, r *resource, key opbus.Key, cur *unstructured.Unstructured, hs []*heldStatus, merge func(cur map[string]any) []any) (*unstructured.Unstructured, error) {
	api := r.api(key.Namespace)
	force := true
	for attempt := 0; ; attempt++ {
		if cur == nil {
			u, err := api.Get(ctx, key.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			cur = u
		}
		var err error
		for _, h := range hs {
			if h.uid != "" && string(cur.GetUID()) != h.uid {
				return nil, errGone
			}
			if sk.superseded(key, h) {
				continue // a newer status of its handler landed while this one waited
			}
			conds, _ := conditions(cur.Object)
			if merge != nil {
				conds = merge(cur.Object)
			}
			st := maps.Clone(h.status)
			if conds != nil {
				st["conditions"] = conds
			}
			md := map[string]any{"name": key.Name, "resourceVersion": cur.GetResourceVersion()}
			if key.Namespace != "" {
				md["namespace"] = key.Namespace
			}
			body, jerr := json.Marshal(map[string]any{
				"apiVersion": r.gvr.GroupVersion().String(), "kind": r.kind, "metadata": md, "status": st,
			})
			if jerr != nil {
				return nil, jerr
			}
			var got *unstructured.Unstructured
			got, err = api.Patch(ctx, key.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: h.self.manager, Force: &force}, "status")
			sk.s.sent(h.self, h.data, err)
			if err != nil {
				break
			}
			sk.landed(key, h)
			cur = got
		}
		if err == nil || !apierrors.IsConflict(err) || attempt == maxStatusConflicts {
			return cur, err
		}
		cur = nil
	}
}
