package opbus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// shmTempDir returns a temporary directory in memory when the machine has
// one, so that a test making hundreds of thousands of fsyncs stays fast.
func shmTempDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "opbus-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// TestLoadWithFaults drives 10,000 keys through 200,000 observed updates
// (-short or -race: 1,000 and 20,000) with handlers that fail 10% of the time, panic
// 1% and are sometimes slow, restarting the bus (a new Bus on the same file
// store, then a re-list, as an informer does) at random points. The oracle:
// for every key and subscription the final value was the last one handled
// successfully, at most once since it became final, no value was handled
// twice in a row, and no handler saw a key's states out of order. No
// goroutine outlives the test and the heap returns to its baseline.
func TestLoadWithFaults(t *testing.T) {
	keys, rounds := 10_000, 20
	if testing.Short() || raceEnabled {
		keys = 1_000 // scripts/test also runs the whole scale without -race
	}
	seed := uint64(20261130)
	dir := shmTempDir(t)
	goroutines := runtime.NumGoroutine()
	heapBefore := heapInUse()

	var restarts, updates int
	var stats Stats
	synctest.Test(t, func(t *testing.T) {
		store, err := NewFileStore(dir)
		must(t, err)
		faults := rand.New(rand.NewPCG(seed, 1))
		var faultMu sync.Mutex
		roll := func(n int) int {
			faultMu.Lock()
			defer faultMu.Unlock()
			return faults.IntN(n)
		}
		type hk struct {
			key     Key
			handler string
		}
		type success struct {
			i     int
			value any
		}
		var mu sync.Mutex
		successes := map[hk][]success{}
		seen := map[hk]int{}
		var disorder []string
		fields := []string{"spec.a", "spec.b", "status.c"}
		start := func() (*Bus, func()) {
			b := newBus(t, &Options{Store: store, Workers: 8, MaxBacklog: 8,
				Backoff: Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second}})
			for _, f := range fields {
				p := MustParsePath(f)
				must(t, b.Handle(f, func(ctx context.Context, ev *Event) (Status, error) {
					n, _ := asNumber(ev.New["i"]) // an int, or a float64 when resumed from the store
					i := int(n.I)
					id := hk{ev.Key, f}
					mu.Lock()
					if ev.Type == Create && len(successes[id]) > 0 {
						disorder = append(disorder, fmt.Sprintf("%v %s: create after %d successes", ev.Key, f, len(successes[id])))
					}
					if i < seen[id] {
						disorder = append(disorder, fmt.Sprintf("%v %s saw %d after %d", ev.Key, f, i, seen[id]))
					}
					seen[id] = i
					mu.Unlock()
					switch r := roll(100); {
					case r < 1:
						panic("injected panic")
					case r < 11:
						return Status{}, errors.New("injected failure")
					case r < 16:
						time.Sleep(time.Duration(roll(200)) * time.Millisecond)
					}
					v, _ := lookup(ev.New, p)
					mu.Lock()
					successes[id] = append(successes[id], success{i, v})
					mu.Unlock()
					return Active(""), nil
				}, On{Fields: []string{f}}))
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- b.Run(ctx) }()
			return b, func() {
				cancel()
				must(t, <-done)
				stats.Ran += b.Stats().Ran
				stats.Failed += b.Stats().Failed
				stats.Panicked += b.Stats().Panicked
				stats.Coalesced += b.Stats().Coalesced
			}
		}

		src := rand.New(rand.NewPCG(seed, 2))
		final := make([]map[string]any, keys)
		since := make([]map[string]int, keys)
		key := func(k int) Key { return Key{Kind: "Widget", Namespace: "load", Name: fmt.Sprint("w", k)} }
		b, stop := start()
		for i := range rounds {
			for k := range keys {
				obj := map[string]any{
					"i":      i,
					"spec":   map[string]any{"a": src.IntN(3), "b": i / 5},
					"status": map[string]any{"c": src.IntN(2)},
				}
				if since[k] == nil {
					since[k] = map[string]int{}
				}
				for _, f := range fields {
					p := MustParsePath(f)
					nv, _ := lookup(obj, p)
					if final[k] == nil {
						since[k][f] = i
					} else if ov, _ := lookup(final[k], p); !Equal(ov, nv) {
						since[k][f] = i
					}
				}
				final[k] = obj
				updates++
				must(t, b.Observe(context.Background(), key(k), obj))
				if src.IntN(keys*rounds/6) == 0 { // about six restarts in all
					synctest.Wait()
					stop()
					restarts++
					b, stop = start()
					for j := range keys { // the re-list of a restarted informer
						if final[j] != nil {
							must(t, b.Observe(context.Background(), key(j), final[j]))
						}
					}
				}
			}
			synctest.Wait()
			time.Sleep(time.Second) // slow handlers finish, retries come due
			synctest.Wait()
		}
		time.Sleep(time.Hour) // every retry is due long before
		synctest.Wait()
		stop()

		if len(disorder) > 0 {
			t.Fatalf("%d out-of-order deliveries, first: %s", len(disorder), disorder[0])
		}
		for k := range keys {
			for _, f := range fields {
				want, _ := lookup(final[k], MustParsePath(f))
				got := successes[hk{key(k), f}]
				n := 0
				for j, s := range got {
					if s.i >= since[k][f] {
						n++
					}
					if j > 0 && Equal(got[j-1].value, s.value) {
						t.Fatalf("%v %s: value %v handled twice in a row: %v", key(k), f, s.value, got)
					}
				}
				if len(got) == 0 || !Equal(got[len(got)-1].value, want) || n > 1 {
					t.Fatalf("%v %s: final %v (since round %d) handled %d times since; history %v", key(k), f, want, since[k][f], n, got)
				}
			}
		}
	})
	t.Logf("%d keys, %d updates, %d restarts; runs %d, failures %d (panics %d), coalesced %d",
		keys, updates, restarts, stats.Ran, stats.Failed, stats.Panicked, stats.Coalesced)
	if restarts == 0 || stats.Panicked == 0 || stats.Failed == 0 {
		t.Errorf("the test injected too little: %d restarts, %d failures, %d panics", restarts, stats.Failed, stats.Panicked)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the test, %d before:\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
	}
	if after := heapInUse(); after > heapBefore+16<<20 {
		t.Errorf("heap grew from %d to %d bytes: bookkeeping outlived its buses", heapBefore, after)
	}
}
