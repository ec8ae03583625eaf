package k8s

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/opbus/opbus"
)

// generationCollector is the ID of the collector through which the
// adapter learns the state of each of the bus's passes on an object; it
// never fills a slot. See [sink.observed].
const generationCollector = "opbus.dev/generation"

// passes remembers, per key, the incarnation and generation of the state
// of the bus's latest pass.
type passes struct {
	mu sync.Mutex
	m  map[opbus.Key]pass
}

type pass struct {
	uid string
	gen int64
}

// collect is the [opbus.CollectFunc] of generationCollector: it notes the
// state's uid and generation, and returns no status.
func (sk *sink) collect(_ context.Context, key opbus.Key, obj map[string]any) opbus.Status {
	if obj == nil {
		return opbus.Status{}
	}
	sk.passes.mu.Lock()
	defer sk.passes.mu.Unlock()
	if sk.passes.m == nil {
		sk.passes.m = map[opbus.Key]pass{}
	}
	sk.passes.m[key] = pass{uid: uid(obj), gen: generation(obj)}
	return opbus.Status{}
}

// forgetPass drops what passes holds of key: its incarnation is deleted.
func (sk *sink) forgetPass(key opbus.Key) {
	sk.passes.mu.Lock()
	defer sk.passes.mu.Unlock()
	delete(sk.passes.m, key)
}

// observed keeps observedGeneration up to date when the bus handled a new
// state without changing a status. The bus calls its sink only when the
// slots change, so a spec change that its handlers handle with the same
// statuses as before would leave the conditions with the generation
// before it, and a client waiting for observedGeneration to reach
// metadata.generation would wait forever. The bus saves the record in
// every pass in which a handler handled a new value, before it publishes
// the statuses; so the store calls observed after each record it saves,
// with the slots that record holds, and observed writes the conditions
// with the generation of the pass's state when the object's conditions
// show an older one. When the slots changed too, the sink's own write
// that follows finds nothing left to change.
//
// A write that fails (conflicts past client-go's retries, under heavy
// writes of others) is tried again with backoff, from 100 ms doubling to
// 10 s, until it goes through, a newer pass's state takes its place, the
// object goes or the lead ends: observedGeneration is never left behind
// for good.
func (sk *sink) observed(ctx context.Context, r *resource, key opbus.Key, inc string, data []byte) {
	sk.observe(ctx, r, key, inc, data, 0)
}

// observe is observed's attempt n (0 for the first).
func (sk *sink) observe(ctx context.Context, r *resource, key opbus.Key, inc string, data []byte, n int) {
	sk.passes.mu.Lock()
	p, ok := sk.passes.m[key]
	sk.passes.mu.Unlock()
	if !ok || inc != "" && p.uid != inc {
		return
	}
	if u, ok := r.cached(key); ok && uid(u.Object) == p.uid && shownGeneration(u.Object, sk.s.names.ready, sk.s.ours) >= p.gen {
		return
	}
	var rec struct {
		Slots opbus.Slots `json:"slots"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return
	}
	obj := map[string]any{"metadata": map[string]any{"uid": p.uid, "generation": p.gen}}
	err := sk.putConditions(ctx, r, key, obj, rec.Slots.Summary(), rec.Slots)
	if err == nil {
		return
	}
	sk.s.mu.Lock()
	w := sk.s.watch
	sk.s.mu.Unlock()
	if w == nil || w.ctx.Err() != nil {
		return
	}
	delay := min(observedRetry<<min(n, 10), maxObservedRetry)
	sk.s.log.Warn("k8s: writing the observed generation; retried with backoff", "key", key.String(), "generation", p.gen, "retry_in", delay, "err", err)
	time.AfterFunc(delay, func() {
		sk.passes.mu.Lock()
		now, ok := sk.passes.m[key]
		sk.passes.mu.Unlock()
		if !ok || now != p || w.ctx.Err() != nil {
			return // a newer pass writes its own, or the object or the lead is gone
		}
		sk.observe(w.ctx, r, key, inc, data, n+1)
	})
}

// observedRetry and maxObservedRetry bound the backoff of a failed write
// of observedGeneration.
const (
	observedRetry    = 100 * time.Millisecond
	maxObservedRetry = 10 * time.Second
)

// shownGeneration returns the observedGeneration of the object's summary
// condition ready, or, without a summary (ready ""), the oldest of those
// of its conditions in ours; -1 without one.
func shownGeneration(obj map[string]any, ready string, ours map[string]bool) int64 {
	l, _ := conditions(obj)
	out := int64(-1)
	for _, e := range l {
		m, _ := e.(map[string]any)
		t, _ := m["type"].(string)
		if ready != "" && t != ready || ready == "" && !ours[t] {
			continue
		}
		g := generation(map[string]any{"metadata": map[string]any{"generation": m["observedGeneration"]}})
		if ready != "" {
			return g
		}
		if out < 0 || g < out {
			out = g
		}
	}
	return out
}
