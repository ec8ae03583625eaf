package juju

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

// recorder is a Runner that records juju-log calls and can fail them.
type recorder struct {
	calls [][]string
	fail  bool
}

func (r *recorder) Run(_ context.Context, name string, args []string, _ []byte) ([]byte, error) {
	if r.fail {
		return nil, &ToolError{Tool: name, ExitCode: 1, Stderr: "ERROR down"}
	}
	r.calls = append(r.calls, append([]string{name}, args...))
	return nil, nil
}

func TestLogHandler(t *testing.T) {
	rec := &recorder{}
	var fallback bytes.Buffer
	log := slog.New(NewLogHandler(&Tools{Runner: rec}, &fallback, &slog.HandlerOptions{Level: slog.LevelDebug - 4}))
	log.Log(context.Background(), slog.LevelDebug-4, "tracing")
	log.Debug("debugging", "n", 1)
	log.Info("informing", "text", "two words")
	log.With("handler", "config").WithGroup("g").Warn("warning", "k", "v")
	log.Error("failing", "err", errors.New("boom"))
	log.Log(context.Background(), slog.LevelError+4, "")
	want := [][]string{
		{"juju-log", "--log-level", "TRACE", "--", "tracing"},
		{"juju-log", "--log-level", "DEBUG", "--", "debugging n=1"},
		{"juju-log", "--log-level", "INFO", "--", `informing text="two words"`},
		{"juju-log", "--log-level", "WARNING", "--", "warning handler=config g.k=v"},
		{"juju-log", "--log-level", "ERROR", "--", "failing err=boom"},
		{"juju-log", "--log-level", "ERROR", "--", ""},
	}
	if !reflect.DeepEqual(rec.calls, want) {
		t.Errorf("calls:\n%q\nwant:\n%q", rec.calls, want)
	}
	if fallback.Len() != 0 {
		t.Errorf("fallback written: %q", fallback.String())
	}

	rec.fail = true
	err := NewLogHandler(&Tools{Runner: rec}, &fallback, nil).Handle(context.Background(), slog.NewRecord(time.Time{}, slog.LevelInfo, "kept", 0))
	if err == nil || fallback.String() != "INFO kept\n" {
		t.Errorf("juju-log failing: got %v and %q, want the error and the line on the fallback", err, fallback.String())
	}
}

func TestLogHandlerWithoutJuju(t *testing.T) {
	var w bytes.Buffer
	h := NewLogHandler(nil, &w, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == "secret" {
				a.Value = slog.StringValue("<redacted>")
			}
			return a
		},
	})
	log := slog.New(h)
	if h.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("Debug enabled at the default level")
	}
	log.Debug("hidden")
	log.Info("shown", "secret", "hunter2")
	if got := w.String(); got != "INFO shown secret=<redacted>\n" {
		t.Errorf("got %q", got)
	}
	if strings.Contains(w.String(), "hunter2") {
		t.Error("ReplaceAttr was not applied")
	}
}
