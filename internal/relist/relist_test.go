package relist

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestRelistWaits checks a key's wait from Wait to Over or the end, that
// End returns each key still waiting once, and that nothing waits after
// the end.
func TestRelistWaits(t *testing.T) {
	var r Relist[string]
	if r.Ended() || r.Waits("a") {
		t.Fatal("a new relist has ended, or a key waits")
	}
	for _, k := range []string{"a", "b", "c", "a"} {
		r.Wait(k)
	}
	r.Over("b")
	if !r.Waits("a") || r.Waits("b") || !r.Waits("c") {
		t.Fatalf("waits a, b, c = %v, %v, %v; want true, false, true", r.Waits("a"), r.Waits("b"), r.Waits("c"))
	}
	got := r.End()
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "c"}) || !r.Ended() {
		t.Fatalf("End = %v (ended %v), want [a c] and ended", got, r.Ended())
	}
	if again := r.End(); again != nil {
		t.Fatalf("second End = %v, want nil", again)
	}
	r.Wait("d")
	if r.Waits("d") || r.Waits("a") {
		t.Fatal("a key waits after the end")
	}
}

// TestWatch checks when Watch ends a relist: after a period with no
// observation, not while observations go on until the longest time has
// passed, and not at all once its context ends.
func TestWatch(t *testing.T) {
	const period, longest = 2 * time.Second, 30 * time.Second
	t.Run("still", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Uint64
			n.Add(1) // observed before Watch began: not a change
			start := time.Now()
			var calls int
			Watch(t.Context(), period, longest, n.Load, func(still, late bool) bool {
				calls++
				if late {
					t.Errorf("late after %v", time.Since(start))
				}
				return still
			})
			if got := time.Since(start); got != period || calls != 1 {
				t.Fatalf("ended after %v and %d calls, want %v and 1", got, calls, period)
			}
		})
	})
	t.Run("busy", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Uint64
			start := time.Now()
			var stills int
			Watch(t.Context(), period, longest, func() uint64 { return n.Add(1) }, func(still, late bool) bool {
				if still {
					stills++
				}
				return late
			})
			if got := time.Since(start); got != longest || stills != 0 {
				t.Fatalf("ended after %v with %d still periods, want %v and none", got, stills, longest)
			}
		})
	})
	t.Run("stillAfterChanges", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Uint64
			start := time.Now()
			var calls int
			Watch(t.Context(), period, longest, n.Load, func(still, late bool) bool {
				calls++
				if calls <= 2 {
					n.Add(1) // an observation in each of the first two periods
					return false
				}
				return still
			})
			// call 3 sees call 2's observation; call 4 is the first still one
			if got := time.Since(start); got != 4*period || calls != 4 {
				t.Fatalf("ended after %v and %d calls, want %v and 4", got, calls, 4*period)
			}
		})
	})
	t.Run("canceled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			var calls int
			Watch(ctx, period, longest, func() uint64 { return 0 }, func(still, late bool) bool {
				calls++
				return false
			})
			if calls != 2 {
				t.Fatalf("%d calls before the context ended at 5s, want 2", calls)
			}
		})
	})
}
