package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/opbus/opbus"
)

// sink is the [opbus.StatusSink] of a [Source]. It writes statuses as the
// [Resource]'s [StatusMode] says, and removes [Finalizer] once an object's
// delete handlers have succeeded.
type sink struct {
	s *Source

	held heldStatuses // handlers' status fields waiting for their pass's write (heldstatus.go)

	mu     sync.Mutex
	kept   map[opbus.Key]kept // statuses last asked for and shown (see restore.go)
	passes passes
	levels levels // overall levels shown with conditions (see levelevents.go)
}

var (
	_ opbus.StatusSink = (*sink)(nil)
	_ opbus.DeleteSink = (*sink)(nil)
	_ opbus.PathWriter = (*sink)(nil)
)

// WrittenPaths implements [opbus.PathWriter]. The conditions and the
// finalizer depend on the handlers registered, so [Source.Run] declares
// them with [opbus.Bus.Ignore].
func (sk *sink) WrittenPaths() []string {
	return []string{annotationPath(sk.s.names.status)}
}

// PutStatus implements [opbus.StatusSink]. It writes only to the object
// of obj's metadata.uid: a status of an object that is gone, written while
// the bus finishes its deletion, must not land on another object that
// took its name.
func (sk *sink) PutStatus(ctx context.Context, key opbus.Key, obj map[string]any, overall opbus.Status, slots opbus.Slots) error {
	begin := time.Now()
	err := sk.putStatus(ctx, key, obj, overall, slots)
	sk.s.opts.Metrics.wrote("status", key, begin, err)
	return err
}

func (sk *sink) putStatus(ctx context.Context, key opbus.Key, obj map[string]any, overall opbus.Status, slots opbus.Slots) error {
	r, err := sk.s.resourceFor(key)
	if err != nil || r.readOnly {
		return err // never written to (readonly.go)
	}
	if obj == nil {
		u, ok := r.cached(key)
		if !ok {
			return nil // gone: nothing to write on
		}
		obj = u.Object
	}
	switch r.mode {
	case StatusConditions:
		err = sk.putConditions(ctx, r, key, obj, overall, slots)
	case StatusAnnotation:
		err = sk.putAnnotation(ctx, r, key, obj, overall)
	}
	sk.s.refused(ctx, r, key, ReasonStatusRefused, err)
	return err
}

// putConditions writes the conditions of the slots and Ready through the
// status subresource, with the object's resource version as a
// precondition: on a conflict it reads the object again and re-applies.
// It starts from the informer's copy, unless the store has just written
// the object (the record is written before the status) and the copy is
// older than that write: then it reads the object first, which costs a
// read instead of a refused write and a read.
// It writes nothing when the conditions are already as wanted.
func (sk *sink) putConditions(ctx context.Context, r *resource, key opbus.Key, obj map[string]any, overall opbus.Status, slots opbus.Slots) error {
	if r.pruned.Load() {
		return fmt.Errorf("k8s: %v: %w: the API server drops status.conditions of %s: give the CRD's status schema a conditions list (or x-kubernetes-preserve-unknown-fields), or set Status: StatusAnnotation",
			key, ErrConditionsPruned, r.gvr.GroupResource())
	}
	sk.keep(key, uid(obj), generation(obj), slots)
	rv := ""
	err := sk.writeConditions(ctx, r, key, obj, overall, slots, &rv)
	sk.wrote(key, rv, err)
	if err == nil {
		sk.s.recheck(r, key)
		sk.emitLevel(ctx, r, key, obj, overall)
	}
	return err
}

// writeConditions is putConditions' write; it sets *rv to the resource
// version its write left the object at, if it wrote.
func (sk *sink) writeConditions(ctx context.Context, r *resource, key opbus.Key, obj map[string]any, overall opbus.Status, slots opbus.Slots, rv *string) error {
	want := wantConditions(overall, slots, generation(obj), sk.s.names, sk.s.ours, nil)
	owned := sk.s.ours
	if gone := goneConditions(obj, slots, sk.s.names, sk.s.ours); len(gone) > 0 {
		owned = maps.Clone(owned)
		maps.Copy(owned, gone)
	}
	if hs := sk.takeFor(key, obj); len(hs) > 0 {
		// The handlers' held status fields go in the same write (heldstatus.go).
		var start *unstructured.Unstructured
		if u, ok := r.cached(key); ok && !sk.s.store.ahead(key, u.GetResourceVersion()) {
			start = u
		}
		got, err := sk.applyHeld(ctx, r, key, start, hs, func(cur map[string]any) []any {
			existing, _ := conditions(cur)
			merged, _ := mergeConditions(existing, want, ownConditions(owned, legacyFound(cur, sk.s.legacy)))
			return merged
		})
		switch {
		case err == nil:
			*rv = got.GetResourceVersion()
			return nil
		case apierrors.IsNotFound(err) || errors.Is(err, errGone):
			return nil
		}
		sk.giveBack(key, hs)
		return fmt.Errorf("k8s: writing the conditions of %v with the status fields of its handlers: %w", key, err)
	}
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var cur map[string]any
		if u, ok := r.cached(key); ok && first && !sk.s.store.ahead(key, u.GetResourceVersion()) {
			cur = u.Object
		} else {
			u, err := r.api(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur = u.Object
		}
		first = false
		if id := uid(obj); id != "" && uid(cur) != id {
			return errGone
		}
		existing, _ := conditions(cur)
		merged, changed := mergeConditions(existing, want, ownConditions(owned, legacyFound(cur, sk.s.legacy)))
		if !changed {
			return nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": resourceVersion(cur)},
			"status":   map[string]any{"conditions": merged},
		})
		if err != nil {
			return err
		}
		got, err := r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: sk.s.name}, "status")
		if err == nil {
			*rv = got.GetResourceVersion()
		}
		return err
	})
	if apierrors.IsNotFound(err) || errors.Is(err, errGone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("k8s: writing the conditions of %v: %w", key, err)
	}
	return nil
}

// putAnnotation writes the overall status to AnnotationStatus and emits an
// Event, when the overall status differs from the one last written.
func (sk *sink) putAnnotation(ctx context.Context, r *resource, key opbus.Key, obj map[string]any, overall opbus.Status) error {
	sk.keep(key, uid(obj), 0, nil)
	rv, err := sk.writeAnnotation(ctx, r, key, obj, overall)
	sk.wrote(key, rv, err)
	if err == nil {
		sk.s.recheck(r, key)
	}
	return err
}

// writeAnnotation is putAnnotation's write; it returns the resource
// version its write left the object at, "" if it wrote nothing.
func (sk *sink) writeAnnotation(ctx context.Context, r *resource, key opbus.Key, obj map[string]any, overall opbus.Status) (string, error) {
	value, last, write, err := sk.annotationValue(r, key, obj, overall)
	if err != nil || !write {
		return "", err
	}
	if s, ok := value.(string); ok {
		if err := checkSize(key, obj, sk.s.names.status, len(s)); err != nil {
			return "", err
		}
	}
	meta := map[string]any{"annotations": map[string]any{sk.s.names.status: value}}
	if id := uid(obj); id != "" {
		meta["uid"] = id // a precondition, as in [store]
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return "", fmt.Errorf("k8s: writing the status of %v: %w", key, err)
	}
	u, err := r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: sk.s.name})
	if isGone(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("k8s: writing the status of %v: %w", key, err)
	}
	sk.setShown(key, overall)
	sk.s.emit(ctx, r, u, overall, last)
	return u.GetResourceVersion(), nil
}

// annotationValue returns the value to write to AnnotationStatus for
// overall (nil removes the annotation), the status last shown, and whether
// a write is needed: none when the overall status is the one last shown.
func (sk *sink) annotationValue(r *resource, key opbus.Key, obj map[string]any, overall opbus.Status) (value any, last opbus.Status, write bool, err error) {
	sk.mu.Lock()
	k, known := sk.kept[key]
	last = k.shown
	known = known && k.hasShown && k.uid == uid(obj)
	sk.mu.Unlock()
	if !known {
		if u, ok := r.cached(key); ok {
			last = parseStatus(u.Object, sk.s.names.status)
		} else {
			last = parseStatus(obj, sk.s.names.status)
		}
	}
	if last == overall {
		sk.setShown(key, overall)
		return nil, last, false, nil
	}
	if overall.IsZero() {
		return nil, last, true, nil
	}
	b, err := json.Marshal(overall)
	if err != nil {
		return nil, last, false, fmt.Errorf("k8s: writing the status of %v: %w", key, err)
	}
	return string(b), last, true, nil
}

func (sk *sink) setShown(key opbus.Key, s opbus.Status) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if sk.kept == nil {
		sk.kept = map[opbus.Key]kept{}
	}
	k := sk.kept[key]
	k.shown, k.hasShown = s, true
	sk.kept[key] = k
}

// parseStatus reads AnnotationStatus; the zero Status when absent or
// unreadable.
func parseStatus(obj map[string]any, name string) opbus.Status {
	v, ok := annotation(obj, name)
	if !ok {
		return opbus.Status{}
	}
	var s opbus.Status
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return opbus.Status{}
	}
	return s
}

// Deleted implements [opbus.DeleteSink]: the object's delete handlers have
// all succeeded, so its finalizer goes.
func (sk *sink) Deleted(ctx context.Context, key opbus.Key, last map[string]any) error {
	sk.mu.Lock()
	delete(sk.kept, key)
	sk.mu.Unlock()
	sk.take(key)
	sk.forgetPass(key)
	sk.levels.forget(key)
	r, err := sk.s.resourceFor(key)
	if err != nil || r.readOnly {
		return err // never written to (readonly.go)
	}
	if u, ok := r.cached(key); ok && sk.s.names.hasFinalizer(u.Object) || last != nil && sk.s.names.hasFinalizer(last) {
		return sk.s.removeFinalizer(ctx, r, key, uid(last))
	}
	return nil
}

// errGone stops a write whose object is gone (another object has its
// name).
var errGone = errors.New("the object is gone")

// removeFinalizer removes [Finalizer] from the object of key with a merge
// patch of metadata.finalizers, under the object's resource version; on a
// conflict it reads the object again. An object that is gone, or does not
// carry the finalizer, needs nothing; so does another object of the same
// name, when id (the uid of the object whose finalizer goes) is set.
func (s *Source) removeFinalizer(ctx context.Context, r *resource, key opbus.Key, id string) error {
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var cur *unstructured.Unstructured
		if u, ok := r.cached(key); ok && first && !s.store.ahead(key, u.GetResourceVersion()) {
			cur = u
		} else {
			u, err := r.api(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur = u
		}
		first = false
		if !s.names.hasFinalizer(cur.Object) || id != "" && uid(cur.Object) != id {
			return nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": cur.GetResourceVersion(),
			"finalizers":      s.names.withFinalizer(cur.Object, false),
		}})
		if err != nil {
			return err
		}
		_, err = r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: s.name})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("k8s: removing finalizer %s from %v: %w", s.names.finalizer, key, err)
	}
	s.log.Debug("k8s: finalizer removed", "key", key.String())
	return nil
}

// goneConditions returns the condition types of the slots that the record
// in obj (the record before this pass) holds, slots (after it) does not,
// and that no registered slot writes: the slots of handlers that are no
// longer registered, which the bus drops at this commit. Their conditions
// were written by the adapter, and go with them, under the spelling of
// either this version or an earlier one ([ConditionType]).
func goneConditions(obj map[string]any, slots opbus.Slots, n *names, ours map[string]bool) map[string]bool {
	v, ok := annotation(obj, n.record)
	if !ok || v == "" {
		return nil
	}
	var rec struct {
		Slots map[string]json.RawMessage `json:"slots"`
	}
	if json.Unmarshal([]byte(v), &rec) != nil {
		return nil
	}
	var gone map[string]bool
	for id := range rec.Slots {
		if _, kept := slots[id]; kept {
			continue
		}
		for _, t := range []string{n.condition(id), n.legacyCondition(id)} {
			if !ours[t] {
				if gone == nil {
					gone = map[string]bool{}
				}
				gone[t] = true
			}
		}
	}
	return gone
}
