package holding

import (
	"context"
	"sync/atomic"
)

// Holding is a context that marks key K as held by the passes it is given
// to. Its zero value is not useful: make one with [With].
type Holding[K comparable] struct {
	context.Context
	key  K
	up   *Holding[K] // the holding of the context this one was made from
	done atomic.Bool
}

// ctxKey is the context key under which a Holding finds itself.
type ctxKey[K comparable] struct{}

// Value returns h itself for its own context key, else what its parent
// context holds.
func (h *Holding[K]) Value(key any) any {
	if key == (ctxKey[K]{}) {
		return h
	}
	return h.Context.Value(key)
}

// End marks the holding ended: the caller has let its key go, and the
// context no longer holds it. It may be called from any goroutine.
func (h *Holding[K]) End() { h.done.Store(true) }

// With returns ctx marked as holding key, for the passes the caller is
// about to make, and the holding to end when it lets key go.
func With[K comparable](ctx context.Context, key K) (context.Context, *Holding[K]) {
	h := &Holding[K]{Context: ctx, key: key, up: of[K](ctx)}
	return h, h
}

// Holds reports whether ctx is the context of a pass of key under way, or
// descends from one, directly or through holdings of other keys.
func Holds[K comparable](ctx context.Context, key K) bool {
	for h := of[K](ctx); h != nil; h = h.up {
		if h.key == key && !h.done.Load() {
			return true
		}
	}
	return false
}

// of returns the innermost holding of ctx, or nil.
func of[K comparable](ctx context.Context) *Holding[K] {
	h, _ := ctx.Value(ctxKey[K]{}).(*Holding[K])
	return h
}
