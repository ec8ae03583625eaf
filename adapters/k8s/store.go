package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/opbus/opbus"
)

// MaxAnnotationBytes is the API server's limit on the total size of an
// object's annotations, keys and values together: 256 KiB.
const MaxAnnotationBytes = 256 << 10

// ErrTooLarge marks a write that the adapter refused because the object's
// annotations would exceed [MaxAnnotationBytes].
var ErrTooLarge = errors.New("annotations too large")

// ErrConditionsPruned is wrapped by the error of a status write to a kind
// whose CRD schema drops status.conditions, which the adapter finds when
// it writes the first conditions: such a write cannot work. Like a write
// the API server refuses, it is reported once by a Warning Event
// StatusRefused on the object, and retried with backoff.
var ErrConditionsPruned = errors.New("status.conditions pruned by the CRD's schema")

// store is the [opbus.Store] of a [Source]: each record lives in
// [AnnotationRecord] on its object.
//
// Load reads the informer's cache, never the API server. The cache lags
// behind the adapter's own writes by a few milliseconds, so the store
// remembers each record it wrote, with the resource version the write
// returned, until the cache holds that version or a later one.
//
// A record belongs to one incarnation of its key: one object, known by its
// metadata.uid, which the bus writes into the record (its "inc", with
// [Incarnation] as the bus's Incarnation). Save and Delete write only to
// the object of that uid: the object of the same name may be another one,
// created after the first was deleted while the bus still finishes the
// first one's deletion. When the object of the record's uid is gone, the
// write has nowhere to go and is dropped. The store remembers, per key,
// the uid of the last record it saved, or of the object it last loaded
// a record from, for Delete; and the record the bus holds, to write back
// should another writer remove or change it (see restore.go).
//
// Records are digests and statuses, not copies of objects: when the bus
// saves a state it could not handle before stopping (its "pending" work),
// Save drops it, because the informer lists every object again when the
// operator starts, and the object in the cluster is newer than any copy.
type store struct {
	s *Source

	mu     sync.Mutex
	recent map[opbus.Key]written
	held   map[opbus.Key]held // the incarnation whose record the bus holds, and that record
}

// written is a record the store wrote and the cache may not show yet.
type written struct {
	rv   string // resource version returned by the write
	data []byte // nil: the record was deleted
}

var (
	_ opbus.Store      = (*store)(nil)
	_ opbus.PathWriter = (*store)(nil)
)

// WrittenPaths implements [opbus.PathWriter].
func (st *store) WrittenPaths() []string {
	return []string{annotationPath(st.s.names.record)}
}

// Load implements [opbus.Store]. An object the cache does not hold has no
// record.
func (st *store) Load(ctx context.Context, key opbus.Key) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := st.s.resourceFor(key)
	if err != nil {
		return nil, err
	}
	u, cached := r.cached(key)
	st.mu.Lock()
	if cached && st.held[key].inc == "" {
		st.setInc(key, uid(u.Object))
	}
	w, ok := st.recent[key]
	if ok && (!cached || olderThan(u.GetResourceVersion(), w.rv)) {
		st.mu.Unlock()
		return w.data, nil
	}
	delete(st.recent, key)
	st.mu.Unlock()
	if !cached {
		return nil, nil
	}
	v, _ := annotation(u.Object, st.s.names.record)
	if v == "" {
		return nil, nil
	}
	st.noteLoaded(key, uid(u.Object), v)
	return []byte(v), nil
}

// Save implements [opbus.Store] with a JSON merge patch of the record
// annotation alone. It refuses a record that would take the object's
// annotations past [MaxAnnotationBytes], with an error naming the object
// and the sizes (errors.Is(err, [ErrTooLarge])).
func (st *store) Save(ctx context.Context, key opbus.Key, data []byte) error {
	begin := time.Now()
	err := st.save(ctx, key, data)
	st.s.opts.Metrics.wrote("store", key, begin, err)
	if st.s.sink != nil {
		st.s.sink.recordWritten(ctx, key)
	}
	return err
}

func (st *store) save(ctx context.Context, key opbus.Key, data []byte) error {
	r, err := st.s.resourceFor(key)
	if err != nil || r.readOnly {
		return err // never written to (readonly.go)
	}
	data, err = dropPending(data)
	if err != nil {
		return fmt.Errorf("k8s: saving record of %v: %w", key, err)
	}
	if u, ok := r.cached(key); ok {
		if err := checkSize(key, u.Object, st.s.names.record, len(data)); err != nil {
			st.s.refused(ctx, r, key, ReasonRecordRefused, err)
			return err
		}
	}
	inc, tomb := recordInc(data)
	if bare(data) {
		// A record that holds only its incarnation says nothing that no
		// record does not, for the object of that incarnation: a bus
		// saves one for each new object, even one no handler handles.
		if u, ok := r.cached(key); ok && uid(u.Object) == inc {
			if cur, err := st.Load(ctx, key); err == nil && cur == nil {
				return nil
			}
		}
	}
	meta := map[string]any{"annotations": map[string]any{st.s.names.record: string(data)}}
	if inc != "" {
		meta["uid"] = inc // a precondition: see [store]
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return fmt.Errorf("k8s: saving record of %v: %w", key, err)
	}
	id := inc
	if u, ok := r.cached(key); ok && (id == "" || id == uid(u.Object)) {
		id = uid(u.Object) // the cache's string, which the store then shares
	}
	st.noteSaving(key, id, string(data))
	u, err := r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: st.s.name})
	st.doneSaving(key, err)
	if (inc != "" || tomb) && isGone(err) {
		st.s.log.Debug("k8s: the object of the record's incarnation is gone; the record is not saved", "key", key.String(), "uid", inc)
		if tomb {
			st.forget(key) // as Delete does: nothing more is written for it
			st.mu.Lock()
			delete(st.held, key)
			st.mu.Unlock()
		}
		return nil
	}
	if err != nil {
		err = fmt.Errorf("k8s: saving record of %v: %w", key, err)
		st.s.refused(ctx, r, key, ReasonRecordRefused, err)
		return err
	}
	st.s.refused(ctx, r, key, ReasonRecordRefused, nil)
	st.remember(key, u.GetResourceVersion(), slices.Clone(data))
	st.mu.Lock()
	if tomb {
		delete(st.held, key) // as Delete does: nothing more is written for it
	} else {
		st.setInc(key, inc)
	}
	st.mu.Unlock()
	if r.mode == StatusConditions {
		st.s.sink.observed(ctx, r, key, inc, data)
	}
	return nil
}

// Delete implements [opbus.Store]: it removes the record annotation. An
// object that is gone has no record to delete.
func (st *store) Delete(ctx context.Context, key opbus.Key) error {
	begin := time.Now()
	err := st.delete(ctx, key)
	st.s.opts.Metrics.wrote("store", key, begin, err)
	return err
}

func (st *store) delete(ctx context.Context, key opbus.Key) error {
	r, err := st.s.resourceFor(key)
	if err != nil || r.readOnly {
		return err // never written to (readonly.go)
	}
	st.mu.Lock()
	h := st.held[key]
	inc := h.inc
	if h.data != "" {
		h.uid, h.data = "", "" // nothing to write back from now on
		st.held[key] = h
	}
	st.mu.Unlock()
	meta := map[string]any{"annotations": map[string]any{st.s.names.record: nil}}
	if inc != "" {
		meta["uid"] = inc
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return fmt.Errorf("k8s: deleting record of %v: %w", key, err)
	}
	u, err := r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: st.s.name})
	if isGone(err) {
		st.forget(key)
		st.mu.Lock()
		delete(st.held, key)
		st.mu.Unlock()
		return nil
	}
	if err != nil {
		return fmt.Errorf("k8s: deleting record of %v: %w", key, err)
	}
	st.remember(key, u.GetResourceVersion(), nil)
	st.mu.Lock()
	delete(st.held, key)
	st.mu.Unlock()
	return nil
}

// setInc notes the uid of the incarnation whose record the bus holds for
// key; st.mu must be held.
func (st *store) setInc(key opbus.Key, inc string) {
	if inc == "" {
		return
	}
	if st.held == nil {
		st.held = map[opbus.Key]held{}
	}
	h := st.held[key]
	h.inc = inc
	st.held[key] = h
}

// recordInc returns the incarnation a record is of: its "inc" member, ""
// if it has none or cannot be read; and whether it is a tombstone, the
// record a finished deletion leaves (its "ended" member).
func recordInc(data []byte) (inc string, tombstone bool) {
	var rec struct {
		Inc   string `json:"inc"`
		Ended int64  `json:"ended"`
	}
	if json.Unmarshal(data, &rec) != nil {
		return "", false
	}
	return rec.Inc, rec.Ended != 0
}

// bare reports whether a record holds nothing but its version and its
// incarnation.
func bare(data []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	for k := range m {
		if k != "v" && k != "inc" {
			return false
		}
	}
	return true
}

// isGone reports whether a write with a metadata.uid precondition failed
// because the object of that uid is gone: no object has the name, or the
// object that has it is another one (the API server refuses to change a
// uid).
func isGone(err error) bool {
	if apierrors.IsNotFound(err) {
		return true
	}
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

func (st *store) remember(key opbus.Key, rv string, data []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.recent == nil {
		st.recent = map[opbus.Key]written{}
	}
	st.recent[key] = written{rv: rv, data: data}
}

// settle drops what the store remembers of key once the cache holds
// resource version rv or a later one. The source calls it on every event.
func (st *store) settle(key opbus.Key, rv string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if w, ok := st.recent[key]; ok && !olderThan(rv, w.rv) {
		delete(st.recent, key)
	}
}

// ahead reports whether the store wrote the object of key at a resource
// version later than rv: a copy of the object at rv is out of date, and a
// write under rv would conflict.
func (st *store) ahead(key opbus.Key, rv string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	w, ok := st.recent[key]
	return ok && olderThan(rv, w.rv)
}

// forget drops what the store remembers of key: the object is gone.
func (st *store) forget(key opbus.Key) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.recent, key)
	if h, ok := st.held[key]; ok && h.data != "" {
		h.uid, h.data, h.pending = "", "", false // the uid stays, for Delete
		st.held[key] = h
	}
}

// olderThan reports whether resource version a is older than b. Resource
// versions are decimal numbers on every API server this adapter knows;
// when they are not, only the version written itself proves that the cache
// caught up.
func olderThan(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return a != b
	}
	return c < 0
}

// dropPending removes the "pending" member of a record; see [store].
func dropPending(data []byte) ([]byte, error) {
	if !bytes.Contains(data, []byte(`"pending"`)) {
		return data, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return data, nil // not ours to judge: saved as it is
	}
	if _, ok := m["pending"]; !ok {
		return data, nil
	}
	delete(m, "pending")
	return json.Marshal(m)
}

// checkSize refuses a write of size bytes to annotation name of obj when
// the annotations would then total more than MaxAnnotationBytes.
func checkSize(key opbus.Key, obj map[string]any, name string, size int) error {
	others := 0
	for k, v := range annotations(obj) {
		if k == name {
			continue
		}
		s, _ := v.(string)
		others += len(k) + len(s)
	}
	total := others + len(name) + size
	if total <= MaxAnnotationBytes {
		return nil
	}
	return fmt.Errorf("k8s: %v: writing annotation %s of %d bytes would take the object's annotations to %d bytes (%d in others), past the API server's limit of 256 KiB (%d bytes): %w",
		key, name, size, total, others, MaxAnnotationBytes, ErrTooLarge)
}
