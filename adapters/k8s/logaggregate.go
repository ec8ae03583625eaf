package k8s

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// aggregatedMessages are the log lines that repeat in bursts, once per
// object, with nothing new to say after the first: the bus's Warn when an
// object's backlog is coalesced (a thousand children created at once give
// a thousand). [Source.BusOptions] wraps the bus's logger so that the
// first of a burst is logged at once and the rest, within
// aggregateWindow, are summed up in one line at its end: the message
// with " (repeated)", how many, and up to five of their keys.
var aggregatedMessages = []string{"opbus: backlog coalesced: intermediate states skipped"}

// aggregateWindow is how long the repeats of a line are summed up.
var aggregateWindow = 10 * time.Second

// aggregating is a slog.Handler that sums up repeats of
// aggregatedMessages.
type aggregating struct {
	slog.Handler
	st *aggregation
}

type aggregation struct {
	mu   sync.Mutex
	open map[string]*repeats // by message
}

type repeats struct {
	n    int
	keys []string
	h    slog.Handler // the handler that logged the first
}

// aggregate returns l with repeated lines summed up; nil for nil.
func aggregate(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	if _, ok := l.Handler().(aggregating); ok {
		return l
	}
	return slog.New(aggregating{Handler: l.Handler(), st: &aggregation{}})
}

// Handle implements slog.Handler.
func (a aggregating) Handle(ctx context.Context, r slog.Record) error {
	if !slices.Contains(aggregatedMessages, r.Message) {
		return a.Handler.Handle(ctx, r)
	}
	a.st.mu.Lock()
	if w := a.st.open[r.Message]; w != nil {
		w.n++
		if len(w.keys) < 5 {
			r.Attrs(func(at slog.Attr) bool {
				if at.Key == "key" {
					w.keys = append(w.keys, at.Value.String())
					return false
				}
				return true
			})
		}
		a.st.mu.Unlock()
		return nil
	}
	if a.st.open == nil {
		a.st.open = map[string]*repeats{}
	}
	a.st.open[r.Message] = &repeats{h: a.Handler}
	msg, level := r.Message, r.Level
	time.AfterFunc(aggregateWindow, func() { a.st.flush(msg, level) })
	a.st.mu.Unlock()
	return a.Handler.Handle(ctx, r)
}

// flush logs the repeats of msg since its first, if any, and closes its
// window.
func (st *aggregation) flush(msg string, level slog.Level) {
	st.mu.Lock()
	w := st.open[msg]
	delete(st.open, msg)
	st.mu.Unlock()
	if w == nil || w.n == 0 || !w.h.Enabled(context.Background(), level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg+" (repeated)", 0)
	r.AddAttrs(slog.Int("repeated", w.n), slog.Duration("within", aggregateWindow), slog.Any("keys", w.keys))
	_ = w.h.Handle(context.Background(), r)
}

// WithAttrs implements slog.Handler.
func (a aggregating) WithAttrs(attrs []slog.Attr) slog.Handler {
	return aggregating{Handler: a.Handler.WithAttrs(attrs), st: a.st}
}

// WithGroup implements slog.Handler.
func (a aggregating) WithGroup(name string) slog.Handler {
	return aggregating{Handler: a.Handler.WithGroup(name), st: a.st}
}
