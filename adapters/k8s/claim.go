package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opbus/opbus"
)

// claimLoop claims objects until the queue shuts down.
func (w *watch) claimLoop(ctx context.Context) {
	for {
		c, quit := w.claims.Get()
		if quit {
			return
		}
		err := w.claim(ctx, c.r, c.key)
		switch {
		case err == nil:
			w.claims.Forget(c)
		case apierrors.IsConflict(err):
			// The object changed: its next event brings it back if it
			// still needs claiming; retry anyway, in case it does not.
			w.claims.AddRateLimited(c)
		case ctx.Err() == nil:
			w.s.log.Error("k8s: claiming an object; retrying", "key", c.key.String(), "retries", w.claims.NumRequeues(c), "err", err)
			w.claims.AddRateLimited(c)
		}
		w.claims.Done(c)
	}
}

// claim writes what the object of key lacks before the bus may see it
// (see [watch]), writes back what another writer removed or changed of
// what the adapter keeps on a live object (see restore.go), or releases a
// deleting object from a finalizer the adapter no longer needs. Each call
// makes at most one write, under the object's resource version; the
// write's own event brings the object back if more is needed. A write
// refused for good is reported as the record's or the status's would be
// (see [Source.refused]); the claim queue retries it with its backoff.
func (w *watch) claim(ctx context.Context, r *resource, key opbus.Key) error {
	u, ok := r.cached(key)
	if !ok {
		return nil // gone
	}
	obj := u.Object
	rv := u.GetResourceVersion()
	if isDeleting(obj) {
		if w.s.names.hasFinalizer(obj) && (!r.finalizer || !w.s.names.hasRecord(obj)) && !w.isDeleting(uid(obj)) {
			return w.s.removeFinalizer(ctx, r, key, uid(obj))
		}
		return nil
	}
	meta := map[string]any{}
	annots := map[string]any{}
	var back []string // what is written back (see restore.go)
	record, lost := w.s.store.recordLost(key, obj)
	if lost && checkSize(key, obj, w.s.names.record, len(record)) == nil {
		annots[w.s.names.record] = record
		back = append(back, "record")
	} else if !w.s.names.hasRecord(obj) {
		annots[w.s.names.record] = ""
	}
	if r.mode == StatusAnnotation {
		if v, lost := w.s.sink.statusLost(key, obj); lost {
			annots[w.s.names.status] = v
			back = append(back, "status")
		}
	}
	if len(annots) > 0 {
		meta["annotations"] = annots
	}
	if r.finalizer != w.s.names.hasFinalizer(obj) {
		meta["finalizers"] = w.s.names.withFinalizer(obj, r.finalizer)
	}
	if len(meta) > 0 {
		meta["resourceVersion"] = rv
		patch, err := json.Marshal(map[string]any{"metadata": meta})
		if err != nil {
			return err
		}
		got, err := r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: w.s.name})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			err = fmt.Errorf("k8s: claiming %v: %w", key, err)
		}
		w.s.refused(ctx, r, key, ReasonRecordRefused, err)
		if err != nil {
			return err
		}
		if len(back) > 0 {
			w.wroteBack(key, got.GetResourceVersion(), back, record)
		}
		w.s.log.Debug("k8s: claimed", "key", key.String())
		return nil
	}
	if r.mode != StatusConditions {
		return nil
	}
	if r.pruned.Load() {
		if !hasConditions(obj) {
			w.changed(r, nil, u) // claimed as far as it can be
		}
		return nil
	}
	if merged, lost := w.s.sink.conditionsLost(key, obj); lost {
		return w.writeBackConditions(ctx, r, key, rv, merged)
	}
	if hasConditions(obj) || w.s.sink.keeps(key, uid(obj)) {
		// Nothing lost, or the sink's write under way (or its retry)
		// puts them back.
		return nil
	}
	first := wantConditions(opbus.Status{}, nil, generation(obj), w.s.names, w.s.ours, w.s.deciders[key.Kind])
	if len(first) == 0 {
		return nil // no summary, no handler to wait for: nothing to show yet
	}
	for i := range first {
		first[i] = withTime(first[i])
	}
	ready, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": rv},
		"status":   map[string]any{"conditions": first},
	})
	if err != nil {
		return err
	}
	got, err := r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, ready,
		metav1.PatchOptions{FieldManager: w.s.name}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		err = fmt.Errorf("k8s: writing the first conditions of %v: %w", key, err)
	}
	w.s.refused(ctx, r, key, ReasonStatusRefused, err)
	if err != nil {
		return err
	}
	if _, ok := conditions(got.Object); !ok {
		// The CRD's schema prunes status.conditions: writing conditions
		// cannot work. Let the objects through; PutStatus reports it.
		r.pruned.Store(true)
		w.s.log.Error("k8s: the API server drops status.conditions of this resource; its statuses cannot be written as conditions",
			"resource", r.gvr.String(), "err", errors.New("status.conditions pruned"))
		w.changed(r, nil, got)
	}
	return nil
}

// withTime sets the condition's lastTransitionTime to now.
func withTime(c metav1.Condition) metav1.Condition {
	c.LastTransitionTime = metav1.Now()
	return c
}
