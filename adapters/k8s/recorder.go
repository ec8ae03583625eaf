package k8s

import (
	"context"
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// truncate returns s cut to at most n bytes, on a character boundary: a
// character that does not fit whole is left out, never split.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Limits of the Events a Source emits, as client-go's recorder has them:
// each object may have a burst of eventBurst Events, then one per
// eventRefill; a repeated Event (same object, type, reason and message) is
// counted on the Event already emitted, among the last eventCacheSize
// distinct ones.
const (
	eventBurst     = 25
	eventRefill    = 5 * time.Minute
	eventCacheSize = 4096
)

// eventKey identifies Events that are the same but for their count and
// times.
type eventKey struct {
	obj                  objectRef
	typ, reason, message string
}

// objectRef is the object an Event is about.
type objectRef struct {
	kind, namespace, name, uid string
}

// emitted is an Event already created: its name and namespace, and its
// count so far.
type emitted struct {
	namespace, name string
	count           int32
	first           metav1.Time
	used            uint64 // when last seen, in calls to plan; for eviction
}

// bucket is an object's token bucket: tokens left at time at.
type bucket struct {
	tokens float64
	at     time.Time
}

// eventLog aggregates repeated Events and rate-limits each object's, as
// client-go's recorder does: the second and later occurrence of an Event
// increments the count and lastTimestamp of the one created first instead
// of creating another, and an object that emits more than eventBurst
// Events in a row gets one more per eventRefill; the others are dropped.
// Its zero value is ready to use.
type eventLog struct {
	mu      sync.Mutex
	now     func() time.Time // nil means time.Now
	burst   float64          // 0 means eventBurst; tests that are not about the limit raise it
	seen    map[eventKey]*emitted
	buckets map[objectRef]*bucket
	clock   uint64
}

// plan decides what to do with ev: drop it (allowed false), or create it
// (prev nil), or count it on prev, an Event emitted before, whose count
// the caller sets to prev.count.
func (l *eventLog) plan(ev *corev1.Event) (prev *emitted, allowed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	io := ev.InvolvedObject
	obj := objectRef{io.Kind, io.Namespace, io.Name, string(io.UID)}
	if l.buckets == nil {
		l.buckets = map[objectRef]*bucket{}
		l.seen = map[eventKey]*emitted{}
	}
	b := l.buckets[obj]
	burst := float64(eventBurst)
	if l.burst > 0 {
		burst = l.burst
	}
	if b == nil {
		b = &bucket{tokens: burst, at: now}
		l.buckets[obj] = b
	}
	b.tokens += float64(now.Sub(b.at)) / float64(eventRefill)
	b.tokens = min(b.tokens, burst)
	b.at = now
	if b.tokens < 1 {
		return nil, false
	}
	b.tokens--

	l.clock++
	k := eventKey{obj, ev.Type, ev.Reason, ev.Message}
	if e := l.seen[k]; e != nil {
		e.count++
		e.used = l.clock
		c := *e
		return &c, true
	}
	if len(l.seen) >= eventCacheSize {
		l.evict(now)
	}
	l.seen[k] = &emitted{namespace: ev.Namespace, name: ev.Name, count: 1, first: ev.FirstTimestamp, used: l.clock}
	return nil, true
}

// evict drops the least recently seen Event, and the buckets that are
// full again at now.
func (l *eventLog) evict(now time.Time) {
	var oldest eventKey
	var at uint64
	for k, e := range l.seen {
		if at == 0 || e.used < at {
			oldest, at = k, e.used
		}
	}
	delete(l.seen, oldest)
	for o, b := range l.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(eventRefill) >= eventBurst {
			delete(l.buckets, o)
		}
	}
}

// forget drops a counted Event that could not be updated (it expired), so
// that the next occurrence creates it again.
func (l *eventLog) forget(ev *corev1.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	io := ev.InvolvedObject
	delete(l.seen, eventKey{objectRef{io.Kind, io.Namespace, io.Name, string(io.UID)}, ev.Type, ev.Reason, ev.Message})
}

// record emits ev: it creates it, or counts it on the same Event emitted
// before, or drops it when its object has emitted too many. A failure is
// logged, not returned: Events are informative.
func (s *Source) record(ctx context.Context, ev *corev1.Event) {
	prev, ok := s.eventLog.plan(ev)
	obj := ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
	if !ok {
		s.log.Debug("k8s: too many events for one object; dropped", "object", obj, "reason", ev.Reason)
		return
	}
	if prev != nil {
		patch, err := json.Marshal(map[string]any{"count": prev.count, "lastTimestamp": ev.LastTimestamp})
		if err == nil {
			_, err = s.events.Events(prev.namespace).Patch(ctx, prev.name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if err == nil {
			return
		}
		if !apierrors.IsNotFound(err) {
			s.log.Error("k8s: counting an event", "object", obj, "reason", ev.Reason, "err", err)
			return
		}
		s.eventLog.forget(ev) // expired: created afresh
		if _, ok := s.eventLog.plan(ev); !ok {
			return
		}
	}
	if _, err := s.events.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.log.Error("k8s: emitting an event", "object", obj, "reason", ev.Reason, "err", err)
	}
}
