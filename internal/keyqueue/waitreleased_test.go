package keyqueue

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestWaitReleased(t *testing.T) {
	f := newFixture(t, Options[string, job]{})
	f.do(func(q *Queue[string, job]) {
		q.Hold("a")
		q.Hold("b")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	f.mu.Lock()
	held, err := f.q.WaitReleased(ctx, []string{"a", "b", "c"})
	f.mu.Unlock()
	if !errors.Is(err, context.DeadlineExceeded) || !slices.Equal(held, []string{"a", "b"}) {
		t.Fatalf("WaitReleased = %v, %v; want [a b] and the context's deadline", held, err)
	}
	done := make(chan error)
	go func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		held, err := f.q.WaitReleased(context.Background(), []string{"a", "b"})
		if held != nil {
			err = errors.Join(err, errors.New("keys still held"))
		}
		done <- err
	}()
	f.do(func(q *Queue[string, job]) { q.Release("a") })
	f.do(func(q *Queue[string, job]) { q.Release("b") })
	if err := <-done; err != nil {
		t.Fatalf("WaitReleased after both let go: %v", err)
	}
}
