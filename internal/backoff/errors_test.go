package backoff

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestPermanent(t *testing.T) {
	mark := errors.New("mark")
	cause := errors.New("bad spec")
	err := Permanent(cause, mark)
	if !errors.Is(err, mark) || !errors.Is(err, cause) {
		t.Errorf("got %v, want an error that is both the mark and its cause", err)
	}
	if got, want := err.Error(), "bad spec"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if Permanent(nil, mark) != nil {
		t.Error("got an error for Permanent(nil), want nil")
	}
}

func TestAfter(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", After(time.Second, nil))
	if d, ok := Asked(err); !ok || d != time.Second {
		t.Errorf("got %v, %v, want 1s, true", d, ok)
	}
	if got, want := err.Error(), "wrapped: not done yet (retry after 1s)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, ok := Asked(errors.New("x")); ok {
		t.Error("a plain error asks for a delay")
	}
}
