package k8s

import (
	"context"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
)

// levels remembers, per object written with conditions, the overall level
// its last status write showed, so that each change of level emits one
// Event ([Source.emit]). An object it does not know yet — after a start,
// or a change of leader — is compared with the overall status of the
// record it held before the pass (the slots its conditions last showed),
// so a restart emits no Event for a level that did not change.
type levels struct {
	mu   sync.Mutex
	last map[opbus.Key]opbus.Status
}

// changed notes overall as the status shown on the object of key, and
// returns the one shown before and whether its level differs. obj is the
// state the pass handled, whose record is the one before the pass.
func (l *levels) changed(key opbus.Key, obj map[string]any, record string, overall opbus.Status) (opbus.Status, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was, ok := l.last[key]
	if !ok {
		was = recordSummary(obj, record)
	}
	if l.last == nil {
		l.last = map[opbus.Key]opbus.Status{}
	}
	l.last[key] = overall
	return was, was.Level != overall.Level
}

// forget drops what is known of key, when its object is gone.
func (l *levels) forget(key opbus.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.last, key)
}

// recordSummary returns the overall status of the slots in obj's record
// annotation (named record); the zero Status when there is none, or it
// cannot be read.
func recordSummary(obj map[string]any, record string) opbus.Status {
	v, ok := annotation(obj, record)
	if !ok || v == "" {
		return opbus.Status{}
	}
	var rec struct {
		Slots opbus.Slots `json:"slots"`
	}
	if json.Unmarshal([]byte(v), &rec) != nil {
		return opbus.Status{}
	}
	return rec.Slots.Summary()
}

// emitLevel emits the Event of a change of the overall level of the object
// of key, written with conditions, if its level changed.
func (sk *sink) emitLevel(ctx context.Context, r *resource, key opbus.Key, obj map[string]any, overall opbus.Status) {
	was, changed := sk.levels.changed(key, obj, sk.s.names.record, overall)
	if !changed {
		return
	}
	u := &unstructured.Unstructured{Object: obj}
	if c, ok := r.cached(key); ok && c.GetUID() == u.GetUID() {
		u = c // the latest resource version
	}
	sk.s.emit(ctx, r, u.DeepCopy(), overall, was)
}
