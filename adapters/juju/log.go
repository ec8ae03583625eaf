package juju

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// LogHandler is a [slog.Handler] that writes each record to the unit's log
// in the controller with juju-log, at the level matching the record's:
// below Debug is TRACE, then DEBUG, INFO, WARNING, and ERROR from Error up.
// The line is the message followed by the attributes in slog's text
// format ("msg k=v g.k=v"), without time or level, which Juju adds.
//
// Without tools (not under Juju), or when juju-log fails, the line goes to
// the writer instead, prefixed with the level. A LogHandler is safe for
// concurrent use.
//
// What is logged is the caller's choice: never log config values or
// relation data at Info or above, since secrets live there.
type LogHandler struct {
	tools *Tools
	w     io.Writer
	level slog.Leveler
	f     *lineFormat
	inner slog.Handler // slog's text handler over f.buf, with attrs and groups
}

// lineFormat is the buffer the text handlers of one LogHandler and those
// derived from it format into, one record at a time.
type lineFormat struct {
	mu  sync.Mutex
	buf bytes.Buffer
	out sync.Mutex // serialises writes to w
}

var _ slog.Handler = (*LogHandler)(nil)

// NewLogHandler returns a LogHandler that logs through tools (nil: to w
// only) and falls back to w (nil: [io.Discard]). Of opts (nil: defaults)
// it uses Level (nil: Info) and ReplaceAttr.
func NewLogHandler(tools *Tools, w io.Writer, opts *slog.HandlerOptions) *LogHandler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	if w == nil {
		w = io.Discard
	}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	f := &lineFormat{}
	user := opts.ReplaceAttr
	inner := slog.NewTextHandler(&f.buf, &slog.HandlerOptions{
		Level: slog.Level(-1 << 20), // the LogHandler decides
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 {
				switch a.Key {
				case slog.TimeKey, slog.LevelKey, slog.MessageKey:
					return slog.Attr{} // Juju adds time and level; the message leads
				}
			}
			if user != nil {
				return user(groups, a)
			}
			return a
		},
	})
	return &LogHandler{tools: tools, w: w, level: level, f: f, inner: inner}
}

// Enabled implements [slog.Handler].
func (h *LogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// Handle implements [slog.Handler]. It returns juju-log's error, after
// writing the line to the fallback writer.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	line, err := h.format(ctx, r)
	if err != nil {
		return err
	}
	level := jujuLevel(r.Level)
	if h.tools != nil {
		// A cancelled hook still logs why it stopped.
		err = h.tools.JujuLog(context.WithoutCancel(ctx), level, line)
		if err == nil {
			return nil
		}
	}
	h.f.out.Lock()
	defer h.f.out.Unlock()
	_, werr := fmt.Fprintf(h.w, "%s %s\n", level, line)
	if err != nil {
		return err
	}
	return werr
}

// format returns the record's line: the message, then its attributes.
func (h *LogHandler) format(ctx context.Context, r slog.Record) (string, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.buf.Reset()
	if err := h.inner.Handle(ctx, r); err != nil {
		return "", err
	}
	attrs := strings.TrimSpace(h.f.buf.String())
	if attrs == "" {
		return r.Message, nil
	}
	if r.Message == "" {
		return attrs, nil
	}
	return r.Message + " " + attrs, nil
}

// WithAttrs implements [slog.Handler].
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.inner = h.inner.WithAttrs(attrs)
	return &c
}

// WithGroup implements [slog.Handler].
func (h *LogHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.inner = h.inner.WithGroup(name)
	return &c
}

// jujuLevel returns the juju-log level of a slog level.
func jujuLevel(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return LogTrace
	case l < slog.LevelInfo:
		return LogDebug
	case l < slog.LevelWarn:
		return LogInfo
	case l < slog.LevelError:
		return LogWarning
	}
	return LogError
}
