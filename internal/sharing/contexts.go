package sharing

import "context"

// Contexts keeps a cancellable context per key: the context of the passes
// of that key, which a Release cancels when it abandons them. The zero
// value holds none.
type Contexts[K comparable] struct {
	m map[K]keyCtx
}

// keyCtx is the context of one key and its cancel function.
type keyCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// For returns the context of key, making it below parent if key has none;
// once made, it is returned whatever parent is given, until End.
func (c *Contexts[K]) For(parent context.Context, key K) context.Context {
	if h, ok := c.m[key]; ok {
		return h.ctx
	}
	ctx, cancel := context.WithCancelCause(parent)
	if c.m == nil {
		c.m = map[K]keyCtx{}
	}
	c.m[key] = keyCtx{ctx: ctx, cancel: cancel}
	return ctx
}

// Cancel cancels the context of key, if it has one, with cause; it keeps
// it until End.
func (c *Contexts[K]) Cancel(key K, cause error) {
	if h, ok := c.m[key]; ok {
		h.cancel(cause)
	}
}

// End cancels and drops the context of key, if it has one.
func (c *Contexts[K]) End(key K) {
	if h, ok := c.m[key]; ok {
		delete(c.m, key)
		h.cancel(nil)
	}
}
