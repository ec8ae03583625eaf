package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opbus/opbus"
)

// What the adapter keeps on a live object — the bus's record in
// [AnnotationRecord], its statuses (conditions, or [AnnotationStatus]) and
// [Finalizer] — may be removed or changed by another writer. The adapter
// writes it back at once, without running a handler, from what the bus
// holds: the record the store last saved or loaded, and the statuses the
// sink was last asked to show.
//
// A write-back races with the bus's own writes of the same object, which
// may be under way or may land at any moment, with newer contents. It is
// made safe by two rules:
//
//   - The store and the sink note what they write before they write it,
//     and the notes only move forward. A write-back reads the object
//     first, then the note: every own write that the object shows was
//     noted before it landed, so the note is at least as new as what the
//     object shows.
//   - A write-back carries the resource version of the object it read as
//     a precondition, and is not retried on a conflict with a merge: it
//     lands only if nothing was written since, so it can never overwrite a
//     newer write; after a conflict, the claim is made again from the
//     object as it then is.
//
// A write-back is not made while the store or the sink is writing the same
// thing (that write puts it back itself, and the sink checks the object
// again when it is done), nor after that write failed (the bus makes it
// again, with its backoff), nor from a state older than the last own write
// of the same thing (that write put it back). A state whose record or
// statuses differ from the notes for any other reason is a foreign edit;
// [watch.lost] finds it on each state the informer delivers, and the claim
// worker writes the notes back.

// held is what the store keeps of a key: the uid of the incarnation whose
// record the bus holds (for Delete's precondition), and that record: the
// one the store last saved, or the one it loaded when the bus first read
// the object. The record is kept as a string that, once the informer
// shows it, shares its bytes with the cache's copy.
type held struct {
	inc     string // uid of the incarnation whose record the bus holds
	uid     string // the object's the record is; a record is never written back on another
	data    string // "" if none is known
	pending bool   // a Save of data is under way, or failed and is retried by the bus: it writes the record itself
}

// heldLocked returns the entry of key, making the map; st.mu is held.
func (st *store) heldLocked(key opbus.Key) held {
	if st.held == nil {
		st.held = map[opbus.Key]held{}
	}
	return st.held[key]
}

// noteSaving notes data as the record of the object of uid id before
// Save writes it.
func (st *store) noteSaving(key opbus.Key, id string, data string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := st.heldLocked(key)
	h.uid, h.data, h.pending = id, data, true
	st.held[key] = h
}

// doneSaving ends the Save that noteSaving announced; err is its error.
func (st *store) doneSaving(key opbus.Key, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if h, ok := st.held[key]; ok {
		h.pending = err != nil
		st.held[key] = h
	}
}

// noteLoaded notes data, read from the object of uid id, as the record the
// bus holds, unless a record of that object is known already: the bus reads
// a record once, and a later read may show another writer's edit.
func (st *store) noteLoaded(key opbus.Key, id string, data string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := st.heldLocked(key)
	if h.data != "" && h.uid == id {
		return
	}
	if inc, _ := recordInc([]byte(data)); inc != "" && inc != id {
		return // another object's record, which the bus sets aside
	}
	h.uid, h.data, h.pending = id, data, false
	st.held[key] = h
}

// recordLost returns the record to write back on obj, the latest state of
// a live object, and whether it must be: the store knows the record the
// bus holds for this object, and obj's record annotation is absent or
// differs from it, while no Save is under way or failed, and the store
// wrote nothing since obj's resource version.
func (st *store) recordLost(key opbus.Key, obj map[string]any) (string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h, ok := st.held[key]
	if !ok || h.data == "" || h.uid != uid(obj) {
		return "", false
	}
	if v, ok := annotation(obj, st.s.names.record); ok && v == h.data {
		h.data = v // the cache's copy: the store's own can go
		st.held[key] = h
		return "", false
	}
	if h.pending {
		return "", false
	}
	if w, ok := st.recent[key]; ok && olderThan(resourceVersion(obj), w.rv) {
		return "", false // a later Save wrote the whole record
	}
	return h.data, true
}

// kept is what the sink was last asked to show on an object: in
// StatusConditions mode the slots (their summary is Ready) and the
// generation, in StatusAnnotation mode the overall status, which is the
// one last written unless a write is pending.
type kept struct {
	uid      string
	rv       string       // resource version of the last write of the statuses that went through
	slots    opbus.Slots  // StatusConditions mode
	gen      int64        // observedGeneration of the conditions
	shown    opbus.Status // in AnnotationStatus, as last written (StatusAnnotation mode)
	hasShown bool
	pending  bool // a write is under way, or failed and is retried by the bus
}

// keep notes what the sink is about to write on the object of uid id: the
// conditions of slots at generation gen (nil slots in StatusAnnotation
// mode); slots is the sink's to keep.
func (sk *sink) keep(key opbus.Key, id string, gen int64, slots opbus.Slots) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if sk.kept == nil {
		sk.kept = map[opbus.Key]kept{}
	}
	k := sk.kept[key]
	if k.uid != id {
		k = kept{uid: id}
	}
	k.gen, k.slots, k.pending = gen, slots, true
	sk.kept[key] = k
}

// wrote ends a write of the statuses of key; rv is the resource version it
// left the object at, "" if it wrote nothing; err is its error.
func (sk *sink) wrote(key opbus.Key, rv string, err error) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	k, ok := sk.kept[key]
	if !ok {
		return
	}
	k.pending = err != nil
	if rv != "" && (k.rv == "" || olderThan(k.rv, rv)) {
		k.rv = rv
	}
	sk.kept[key] = k
}

// current returns what the sink keeps on the object obj is a state of, if
// the statuses of obj may have to be written back: nothing is being
// written or failed to be, and no write of them went through after obj's
// resource version.
func (sk *sink) current(key opbus.Key, obj map[string]any) (kept, bool) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	k, ok := sk.kept[key]
	if !ok || k.pending || k.uid != uid(obj) || k.rv != "" && olderThan(resourceVersion(obj), k.rv) {
		return kept{}, false
	}
	return k, true
}

// conditionsLost returns the conditions to write back on obj, the latest
// state of a live object, and whether they must be: one of the adapter's
// conditions is missing, changed, or there when it should not be.
func (sk *sink) conditionsLost(key opbus.Key, obj map[string]any) ([]any, bool) {
	k, ok := sk.current(key, obj)
	if !ok {
		return nil, false
	}
	want := wantConditions(k.slots.Summary(), k.slots, k.gen, sk.s.names, sk.s.ours, nil)
	existing, ok := conditions(obj)
	if ok && shows(existing, want, sk.s.ours) {
		return nil, false // the common case, checked on every state: no conversion
	}
	return mergeConditions(existing, want, sk.s.ours)
}

// shows reports whether the conditions of the types in ours in existing
// are exactly want, one of each type, in status, reason, message and
// observedGeneration (the fields mergeConditions compares).
func shows(existing []any, want []metav1.Condition, ours map[string]bool) bool {
	n := 0
	for _, e := range existing {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		t, _ := m["type"].(string)
		if !ours[t] {
			continue
		}
		n++
		i := slices.IndexFunc(want, func(c metav1.Condition) bool { return c.Type == t })
		if i < 0 {
			return false
		}
		c := want[i]
		if m["status"] != any(string(c.Status)) || m["reason"] != any(c.Reason) || m["message"] != any(c.Message) ||
			integer(m["observedGeneration"]) != c.ObservedGeneration {
			return false
		}
	}
	return n == len(want)
}

// statusLost returns the value of AnnotationStatus to write back on obj
// (nil to remove it), and whether it must be: the annotation does not show
// the overall status the sink last wrote.
func (sk *sink) statusLost(key opbus.Key, obj map[string]any) (any, bool) {
	k, ok := sk.current(key, obj)
	if !ok || !k.hasShown {
		return nil, false
	}
	v, has := annotation(obj, sk.s.names.status)
	if k.shown.IsZero() {
		return nil, has
	}
	b, err := json.Marshal(k.shown)
	if err != nil || has && v == string(b) {
		return nil, false
	}
	return string(b), true
}

// lost reports whether obj, the latest state of a live object the adapter
// has claimed, lacks or changed what the adapter keeps on it: its record,
// or its statuses.
func (w *watch) lost(r *resource, key opbus.Key, obj map[string]any) bool {
	if _, ok := w.s.store.recordLost(key, obj); ok {
		return true
	}
	switch r.mode {
	case StatusConditions:
		if r.pruned.Load() {
			return false
		}
		_, ok := w.s.sink.conditionsLost(key, obj)
		return ok
	case StatusAnnotation:
		_, ok := w.s.sink.statusLost(key, obj)
		return ok
	}
	return false
}

// recheck claims the object of key again if its cached state lacks what
// the adapter keeps on it. The sink calls it when a write of statuses ends:
// a foreign edit seen while it wrote was left to that write, which may
// have found nothing to change in the state it read.
func (s *Source) recheck(r *resource, key opbus.Key) {
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w == nil {
		return
	}
	if u, ok := r.cached(key); ok && !isDeleting(u.Object) && w.claimed(r, u.Object) && w.lost(r, key, u.Object) {
		w.claims.Add(claim{r, key})
	}
}

// keeps reports whether the sink keeps statuses for the object of uid id.
func (sk *sink) keeps(key opbus.Key, id string) bool {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	k, ok := sk.kept[key]
	return ok && k.uid == id
}

// advance notes that a write-back of the statuses of key left the object
// at resource version rv.
func (sk *sink) advance(key opbus.Key, rv string) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if k, ok := sk.kept[key]; ok && (k.rv == "" || olderThan(k.rv, rv)) {
		k.rv = rv
		sk.kept[key] = k
	}
}

// wroteBack notes a write-back of the claim's that left the object of key
// at resource version rv: what it wrote back, and record if that is the
// record.
func (w *watch) wroteBack(key opbus.Key, rv string, what []string, record string) {
	for _, x := range what {
		switch x {
		case "record":
			w.s.store.remember(key, rv, []byte(record))
		case "status", "conditions":
			w.s.sink.advance(key, rv)
		}
	}
	w.s.log.Info("k8s: wrote back what another writer removed or changed", "key", key.String(), "what", what)
}

// writeBackConditions writes the conditions merged onto the object of key
// at resource version rv, through the status subresource, under that
// resource version. A write refused for good is reported as the sink's
// would be.
func (w *watch) writeBackConditions(ctx context.Context, r *resource, key opbus.Key, rv string, merged []any) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": rv},
		"status":   map[string]any{"conditions": merged},
	})
	if err != nil {
		return err
	}
	got, err := r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: w.s.name}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		err = fmt.Errorf("k8s: writing back the conditions of %v: %w", key, err)
	}
	w.s.refused(ctx, r, key, ReasonStatusRefused, err)
	if err != nil {
		return err
	}
	w.wroteBack(key, got.GetResourceVersion(), []string{"conditions"}, "")
	return nil
}

// integer returns an integer of an unstructured object; 0 if v is none.
func integer(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

// hasConditions reports whether obj has a status.conditions list.
func hasConditions(obj map[string]any) bool {
	_, ok := conditions(obj)
	return ok
}
