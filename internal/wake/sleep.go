package wake

import (
	"context"
	"time"
)

// Sleep waits until d has passed on the clock whose AfterFunc arms the
// timer (time.AfterFunc for the system clock), or until ctx ends, whose
// error it then returns. A d of zero or less ends at once, unless ctx has
// ended first.
func Sleep[T interface{ Stop() bool }](ctx context.Context, d time.Duration, afterFunc func(time.Duration, func()) T) error {
	due := make(chan struct{})
	t := afterFunc(d, func() { close(due) })
	defer t.Stop()
	select {
	case <-due:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Within waits until done is closed or d has passed on the system clock,
// and reports whether done was closed.
func Within(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
