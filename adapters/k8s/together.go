package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opbus/opbus"
)

var _ opbus.StatusStore = (*store)(nil)

// SaveStatus implements [opbus.StatusStore] (core rule 22b). For a kind
// whose status is an annotation ([StatusAnnotation]) the record and the
// status are two annotations of one object, and one merge patch writes
// both, under the uid precondition each carries alone. It declines, and
// the bus writes the two apart, for a kind whose status is its conditions
// (the status subresource, which a patch of the object does not reach),
// for a sink other than the Source's, and for a write that one of the two
// alone would treat specially: a record of another incarnation or with
// nothing in it, a status already shown, annotations past
// [MaxAnnotationBytes]. A combined write that the API server refuses for
// good (admission, validation) is declined too, having written nothing,
// so that each write meets the refusal on its own and reports it.
func (st *store) SaveStatus(ctx context.Context, to opbus.StatusSink, key opbus.Key, data []byte, obj map[string]any, overall opbus.Status, slots opbus.Slots) (bool, error) {
	sk := st.s.sink
	if sk == nil || to != opbus.StatusSink(sk) || obj == nil {
		return false, nil
	}
	r, err := st.s.resourceFor(key)
	if err == nil && r.mode == StatusConditions && !r.readOnly {
		sk.statusFollows(key) // the record's write leaves held status fields to it
	}
	if err != nil || r.readOnly || r.mode != StatusAnnotation {
		return false, nil
	}
	data, err = dropPending(data)
	if err != nil {
		return false, nil
	}
	inc, _ := recordInc(data)
	if inc == "" || inc != uid(obj) || bare(data) {
		return false, nil
	}
	value, last, write, err := sk.annotationValue(r, key, obj, overall)
	if err != nil || !write {
		return false, nil
	}
	id := inc
	current := obj
	if u, ok := r.cached(key); ok && uid(u.Object) == inc {
		id, current = uid(u.Object), u.Object // the cache's string, which the store then shares
	}
	status, _ := value.(string)
	if !fitTogether(current, st.s.names.record, len(data), st.s.names.status, len(status)) {
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": inc, // a precondition: see [store]
		"annotations": map[string]any{
			st.s.names.record: string(data),
			st.s.names.status: value,
		},
	}})
	if err != nil {
		return false, nil
	}

	begin := time.Now()
	st.noteSaving(key, id, string(data))
	sk.keep(key, id, 0, nil)
	u, err := r.api(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: st.s.name})
	st.doneSaving(key, err)
	gone := isGone(err)
	rv := ""
	if err == nil {
		rv = u.GetResourceVersion()
	}
	if gone {
		sk.wrote(key, "", nil)
	} else {
		sk.wrote(key, rv, err)
	}
	st.s.opts.Metrics.wrote("store", key, begin, err)
	st.s.opts.Metrics.wrote("status", key, begin, err)
	switch {
	case gone:
		st.s.log.Debug("k8s: the object of the record's incarnation is gone; the record and status are not written", "key", key.String(), "uid", inc)
		return true, nil
	case err != nil && refusedForGood(err):
		return false, nil
	case err != nil:
		return true, fmt.Errorf("k8s: saving record and status of %v: %w", key, err)
	}
	st.s.refused(ctx, r, key, ReasonRecordRefused, nil)
	st.s.refused(ctx, r, key, ReasonStatusRefused, nil)
	st.remember(key, rv, slices.Clone(data))
	st.mu.Lock()
	st.setInc(key, inc)
	st.mu.Unlock()
	sk.setShown(key, overall)
	st.s.emit(ctx, r, u, overall, last)
	st.s.recheck(r, key)
	return true, nil
}

// fitTogether reports whether writing annotations a and b, of sizes na and
// nb, leaves the annotations of obj within [MaxAnnotationBytes].
func fitTogether(obj map[string]any, a string, na int, b string, nb int) bool {
	total := len(a) + na + len(b) + nb
	for k, v := range annotations(obj) {
		if k == a || k == b {
			continue
		}
		s, _ := v.(string)
		total += len(k) + len(s)
	}
	return total <= MaxAnnotationBytes
}
