package opbus

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// timerLog is an Observer that keeps what TimerDue reports.
type timerLog struct {
	mu   sync.Mutex
	runs []string
}

func (*timerLog) Observed(Key, int)                              {}
func (*timerLog) Coalesced(Key)                                  {}
func (*timerLog) Handled(Key, string, int, time.Duration, error) {}
func (*timerLog) Retrying(Key, time.Duration)                    {}
func (l *timerLog) TimerDue(key Key, handler string, late time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, key.Name+"/"+handler+" late "+late.String())
}

// TestTimerObserver: an Observer that is a TimerObserver hears of each due
// run and how late it starts. With one worker, a handler on another object
// that holds it from 5 s to 20 s makes the run due at 10 s start at 20 s,
// 10 s late; the run due at 30 s starts on time. The first run (the
// object's creation) and the other object's run are not due runs.
func TestTimerObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &timerLog{}
		b := newBus(t, &Options{Observer: l, Workers: 1})
		must(t, b.Handle("poll", func(ctx context.Context, ev *Event) (Status, error) {
			return Active("ok"), nil
		}, On{Every: 10 * time.Second, Kinds: []string{"Pod"}}))
		must(t, b.Handle("slow", func(ctx context.Context, ev *Event) (Status, error) {
			time.Sleep(15 * time.Second)
			return Active("done"), nil
		}, On{Kinds: []string{"Job"}}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
		time.Sleep(5 * time.Second)
		must(t, b.Observe(t.Context(), Key{Kind: "Job", Namespace: "default", Name: "job"}, map[string]any{"spec": 1}))
		time.Sleep(31 * time.Second)
		synctest.Wait()
		must(t, stop())
		l.mu.Lock()
		defer l.mu.Unlock()
		want := []string{"web/poll late 10s", "web/poll late 0s"}
		if len(l.runs) != len(want) || l.runs[0] != want[0] || l.runs[1] != want[1] {
			t.Errorf("TimerDue: got %q, want %q", l.runs, want)
		}
	})
}
