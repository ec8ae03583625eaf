package opbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func withUID(uid string, fields map[string]any) map[string]any {
	o := map[string]any{"metadata": map[string]any{"uid": uid}}
	for k, v := range fields {
		o[k] = v
	}
	return o
}

// TestStaleRetryAfterDelete: a retry armed before a deletion
// never runs after it, and never overlaps the next incarnation's pass.
func TestStaleRetryAfterDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{Incarnation: uidOf, Backoff: Backoff{Initial: time.Second, Jitter: 0.01}})
		var mu sync.Mutex
		var log []string
		var inPass atomic.Int32
		fails := true
		note := func(s string) {
			if inPass.Add(1) != 1 {
				t.Errorf("two passes on one key at once")
			}
			mu.Lock()
			log = append(log, s)
			mu.Unlock()
			inPass.Add(-1)
		}
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			note(ev.Type.String() + " " + uidOf(ev.Object()))
			mu.Lock()
			defer mu.Unlock()
			if fails && ev.Type != Delete {
				fails = false
				return Status{}, errors.New("first attempt fails")
			}
			return Active(""), nil
		}, On{Types: []EventType{Create, Update, Delete}}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), podKey, withUID("u1", map[string]any{"a": 1})))
		synctest.Wait() // failed: a retry is armed for u1
		must(t, b.ObserveDelete(t.Context(), podKey, withUID("u1", map[string]any{"a": 1})))
		synctest.Wait()
		must(t, b.Observe(t.Context(), podKey, withUID("u2", map[string]any{"a": 1})))
		synctest.Wait()
		time.Sleep(time.Hour) // far past u1's retry
		synctest.Wait()
		must(t, stop())
		got := strings.Join(log, ",")
		if want := "create u1,delete u1,create u2"; got != want {
			t.Fatalf("runs %s, want %s", got, want)
		}
		st, slots, err := b.Status(t.Context(), podKey)
		must(t, err)
		if st.Level != LevelActive || len(slots) != 1 {
			t.Fatalf("status %v %v, want active from u2 alone", st, slots)
		}
	})
}

// TestIncarnationsShareNothing: after a deletion whose handler
// failed, the re-created object inherits no digest, slot, value or retry,
// and the old deletion is finished first.
func TestIncarnationsShareNothing(t *testing.T) {
	for _, withIDs := range []bool{false, true} {
		t.Run(map[bool]string{false: "deletions only", true: "incarnation IDs"}[withIDs], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := &Options{Backoff: Backoff{Initial: time.Second, Jitter: 0.01}}
				if withIDs {
					opts.Incarnation = uidOf
				}
				b := newBus(t, opts)
				var mu sync.Mutex
				var log []string
				cleanupFails := 1
				must(t, b.Handle("cleanup", func(ctx context.Context, ev *Event) (Status, error) {
					mu.Lock()
					defer mu.Unlock()
					log = append(log, "cleanup "+uidOf(ev.Old))
					if cleanupFails > 0 {
						cleanupFails--
						return Status{}, errors.New("cleanup failed")
					}
					return Status{}, nil
				}, On{Types: []EventType{Delete}}))
				must(t, b.Handle("main", func(ctx context.Context, ev *Event) (Status, error) {
					mu.Lock()
					defer mu.Unlock()
					log = append(log, ev.Type.String()+" "+uidOf(ev.New))
					if _, ok := ev.Value("machine"); ok {
						t.Errorf("%s: value of the old incarnation visible", uidOf(ev.New))
					}
					ev.SetValue("machine", "running")
					if uidOf(ev.New) == "u1" {
						return Blocked("old problem"), nil
					}
					return Active(""), nil
				}, On{Fields: []string{"spec"}}))
				stop := run(t, b)
				must(t, b.Observe(t.Context(), podKey, withUID("u1", map[string]any{"spec": "x"})))
				synctest.Wait()
				must(t, b.ObserveDelete(t.Context(), podKey, withUID("u1", map[string]any{"spec": "x"})))
				synctest.Wait()
				// The same spec again, under a new incarnation: it must run.
				must(t, b.Observe(t.Context(), podKey, withUID("u2", map[string]any{"spec": "x"})))
				synctest.Wait()
				time.Sleep(time.Minute)
				synctest.Wait()
				must(t, b.ObserveDelete(t.Context(), podKey, withUID("u2", map[string]any{"spec": "x"})))
				synctest.Wait()
				must(t, stop())
				want := "create u1,cleanup u1,cleanup u1,create u2,cleanup u2"
				if got := strings.Join(log, ","); got != want {
					t.Fatalf("runs %s, want %s", got, want)
				}
			})
		})
	}
}

// TestIncarnationStoredRecord (rule 14): a stored record of another
// incarnation is set aside, not used.
func TestIncarnationStoredRecord(t *testing.T) {
	ctx := t.Context()
	store := NewMemoryStore()
	var h recorder
	build := func() *Bus {
		b := newBus(t, &Options{Store: store, Incarnation: uidOf})
		must(t, b.Handle("h", h.handle, On{Fields: []string{"spec"}}))
		return b
	}
	must(t, build().Dispatch(ctx, podKey, withUID("u1", map[string]any{"spec": 1})))
	// Deleted and re-created while no program watched.
	must(t, build().Dispatch(ctx, podKey, withUID("u2", map[string]any{"spec": 1})))
	if h.count() != 2 || h.last().Type != Create {
		t.Fatalf("the new incarnation ran %d times, last %v; want a second create", h.count(), h.last().Type)
	}
	data, _ := store.Load(ctx, podKey)
	if !strings.Contains(string(data), `"inc":"u2"`) {
		t.Fatalf("record %s is not u2's", data)
	}
}

// TestDeleteNeverCoalesced: coalescing keeps deletions and
// incarnation boundaries.
func TestDeleteNeverCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, &Options{MaxBacklog: 2, Workers: 1})
		var mu sync.Mutex
		var log []string
		gate := make(chan struct{})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.Key.Name == "gate" {
				<-gate
				return Status{}, nil
			}
			mu.Lock()
			defer mu.Unlock()
			if ev.Type == Delete {
				log = append(log, "delete")
			} else {
				log = append(log, ev.Type.String()+" "+ev.New["v"].(string))
			}
			return Status{}, nil
		}, On{Types: []EventType{Create, Update, Delete}}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), Key{Kind: "X", Name: "gate"}, map[string]any{}))
		synctest.Wait() // the only worker is held
		for _, v := range []string{"a", "b", "c"} {
			must(t, b.Observe(t.Context(), podKey, map[string]any{"v": v}))
		}
		must(t, b.ObserveDelete(t.Context(), podKey, map[string]any{"v": "c"}))
		for _, v := range []string{"d", "e", "f"} {
			must(t, b.Observe(t.Context(), podKey, map[string]any{"v": v}))
		}
		close(gate)
		synctest.Wait()
		must(t, stop())
		if got, want := strings.Join(log, ","), "create c,delete,create f"; got != want {
			t.Fatalf("runs %s, want %s", got, want)
		}
		if b.Stats().Coalesced == 0 {
			t.Fatal("no coalescing counted")
		}
	})
}

// TestPendingKeepsDeletions: states saved at shutdown keep the
// deletion between two incarnations.
func TestPendingKeepsDeletions(t *testing.T) {
	dir := t.TempDir()
	var log []string
	build := func(t *testing.T, gate chan struct{}) *Bus {
		store, err := NewFileStore(dir)
		must(t, err)
		b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: time.Second})
		must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.Key.Name == "gate" {
				if gate != nil {
					<-ctx.Done()
					return Status{}, ctx.Err()
				}
				return Status{}, nil
			}
			if ev.Type == Delete {
				log = append(log, "delete "+ev.Old["v"].(string))
			} else {
				log = append(log, ev.Type.String()+" "+ev.New["v"].(string))
			}
			return Status{}, nil
		}, On{Types: []EventType{Create, Update, Delete}}))
		return b
	}
	synctest.Test(t, func(t *testing.T) {
		b := build(t, make(chan struct{}))
		stop := run(t, b)
		must(t, b.Observe(t.Context(), Key{Kind: "X", Name: "gate"}, map[string]any{}))
		synctest.Wait()
		must(t, b.Observe(t.Context(), podKey, map[string]any{"v": "a"}))
		must(t, b.ObserveDelete(t.Context(), podKey, map[string]any{"v": "a"}))
		must(t, b.Observe(t.Context(), podKey, map[string]any{"v": "b"}))
		must(t, stop())
	})
	synctest.Test(t, func(t *testing.T) {
		b := build(t, nil)
		stop := run(t, b)
		synctest.Wait()
		must(t, stop())
	})
	if got, want := strings.Join(log, ","), "create a,delete a,create b"; got != want {
		t.Fatalf("after restart: %s, want %s", got, want)
	}
}

// TestPendingDeletionOfANewerIncarnation: a deletion of another
// incarnation than the live one, observed after the live one's state,
// ends the live one: its delete handlers run. Left pending at a stop, it
// is handled so by the next process as well (the pending states are newer
// than the record), not dropped as a stale repeat (rule 14).
func TestPendingDeletionOfANewerIncarnation(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			store := NewMemoryStore()
			other := Key{Kind: "Pod", Namespace: "default", Name: "other"}
			var mu sync.Mutex
			var log []string
			started, unblock := make(chan struct{}, 1), make(chan struct{})
			newB := func() *Bus {
				b := newBus(t, &Options{Store: store, Workers: 1, Incarnation: uidOf, ShutdownTimeout: 50 * time.Millisecond})
				must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
					if ev.Key == other {
						started <- struct{}{}
						select {
						case <-ctx.Done():
						case <-unblock:
						}
						return Active(""), nil
					}
					mu.Lock()
					log = append(log, ev.Type.String()+" "+uidOf(ev.Object()))
					mu.Unlock()
					return Active(""), nil
				}, On{Types: []EventType{Create, Update, Delete}}))
				return b
			}
			b := newB()
			stop := run(t, b)
			must(t, b.Dispatch(t.Context(), podKey, withUID("u1", map[string]any{"a": 1})))
			must(t, b.Observe(t.Context(), other, withUID("o1", nil)))
			<-started // the one worker is held: what follows stays queued
			must(t, b.ObserveDelete(t.Context(), podKey, withUID("u2", map[string]any{"a": 2})))
			if !restart {
				close(unblock)
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				must(t, b.Settle(ctx))
				must(t, stop())
			} else {
				must(t, stop()) // the deletion is saved as pending
				b2 := newB()
				close(unblock)
				stop2 := run(t, b2)
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				must(t, b2.Settle(ctx))
				must(t, stop2())
			}
			mu.Lock()
			defer mu.Unlock()
			if got, want := strings.Join(log, ","), "create u1,delete u2"; got != want {
				t.Errorf("handler runs %q, want %q", got, want)
			}
		})
	}
}
