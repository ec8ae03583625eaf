package opbus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// numRuns registers a handler that records, per key name, the numbers
// (spec.image) it handles, in order; hook runs inside the handler.
func numRuns(t *testing.T, b *Bus, hook func(ctx context.Context, ev *Event, n int) error) func(name string) []int {
	var mu sync.Mutex
	ran := map[string][]int{}
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.Object(), "spec.image")
		n, _ := strconv.Atoi(img)
		if ev.Type == Delete {
			n = -n
		}
		mu.Lock()
		ran[ev.Key.Name] = append(ran[ev.Key.Name], n)
		mu.Unlock()
		if hook != nil {
			if err := hook(ctx, ev, n); err != nil {
				return Status{}, err
			}
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	return func(name string) []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran[name])
	}
}

func busSeq(b *Bus) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.q.kq.LastSeq()
}

// many concurrent Dispatch calls on one key, mixed with
// Observe, with Run and a small MaxBacklog.
func TestDispatchAttackStress(t *testing.T) {
	for _, c := range []struct {
		workers, backlog int
		beside           bool
	}{{1, 1, false}, {1, 2, true}, {2, 1, true}, {4, 2, false}, {4, 1, true}, {3, 2, true}} {
		t.Run(fmt.Sprintf("w%d_b%d_beside%v", c.workers, c.backlog, c.beside), func(t *testing.T) {
			atkStress(t, c.workers, c.backlog, c.beside)
		})
	}
}

func atkStress(t *testing.T, workers, backlog int, beside bool) {
	mem := NewMemoryStore()
	opts := &Options{Workers: workers, MaxBacklog: backlog, Store: mem}
	if beside {
		opts.Store = &slowStore{MemoryStore: mem, took: 300 * time.Microsecond}
	}
	b := newBus(t, opts)
	b.lanes.pipeAlways = beside
	runs := numRuns(t, b, func(ctx context.Context, ev *Event, n int) error {
		if n%7 == 0 {
			time.Sleep(time.Duration(rand.IntN(400)) * time.Microsecond)
		}
		return nil
	})
	stop := run(t, b)
	ctx := context.Background()

	var order sync.Mutex // serializes the start of each call
	var next int
	var dispatched sync.Map // n → true
	var failures atomic.Int32
	issue := func(key Key, dispatch bool) (int, <-chan error) {
		order.Lock()
		defer order.Unlock()
		next++
		n := next
		s0 := busSeq(b)
		obj := doc(key.Name, strconv.Itoa(n))
		if !dispatch {
			must(t, b.Observe(ctx, key, obj))
			return n, nil
		}
		done := make(chan error, 1)
		go func() { done <- b.Dispatch(ctx, key, obj) }()
		for busSeq(b) == s0 {
			runtime.Gosched()
		}
		return n, done
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				key := keyNamed("a")
				if (g+i)%9 == 0 {
					key = keyNamed("b")
				}
				n, done := issue(key, true)
				select {
				case err := <-done:
					if err != nil {
						failures.Add(1)
						t.Errorf("Dispatch %d of %s: %v", n, key.Name, err)
					}
				case <-time.After(20 * time.Second):
					t.Errorf("Dispatch %d stuck:\n%s", n, stacksWith("opbus."))
					failures.Add(1)
					return
				}
				dispatched.Store(n, key.Name)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for i := range 150 {
				key := keyNamed("a")
				if i%5 == 0 {
					key = keyNamed("b")
				}
				issue(key, false)
				if i%10 == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	wg.Wait()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := b.Wait(wctx); err != nil {
		t.Fatalf("Wait: %v\n%s", err, stacksWith("opbus."))
	}
	for _, name := range []string{"a", "b"} {
		got := runs(name)
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Errorf("%s: handled out of order at %d: %v then %v (around %v)", name, i, got[i-1], got[i], got[max(0, i-5):min(len(got), i+5)])
				break
			}
		}
		_, slots, err := b.Status(ctx, keyNamed(name))
		must(t, err)
		last := 0
		dispatched.Range(func(k, v any) bool { return true })
		for _, n := range got {
			last = max(last, n)
		}
		if slots["image"].Message != strconv.Itoa(last) {
			t.Errorf("%s: status %q, want the last handled %d", name, slots["image"].Message, last)
		}
	}
	// Each Dispatch's state was handled.
	seenA := map[int]bool{}
	for _, name := range []string{"a", "b"} {
		for _, n := range runs(name) {
			seenA[n] = true
		}
	}
	dispatched.Range(func(k, v any) bool {
		if !seenA[k.(int)] {
			t.Errorf("Dispatch %d of %s returned nil but its state was not handled", k, v)
		}
		return true
	})
	// The latest state of each key was handled last.
	order.Lock()
	maxN := next
	order.Unlock()
	_ = maxN
	must(t, stop())
}

// shutdown while several Dispatch calls wait.
func TestDispatchAttackShutdownWithSeveralWaiting(t *testing.T) {
	for _, beside := range []bool{false, true} {
		t.Run(fmt.Sprintf("beside%v", beside), func(t *testing.T) {
			mem := NewMemoryStore()
			var st Store = mem
			if beside {
				st = &slowStore{MemoryStore: mem, took: time.Millisecond}
			}
			b := newBus(t, &Options{Store: st, Workers: 2, MaxBacklog: 1, ShutdownTimeout: 50 * time.Millisecond})
			b.lanes.pipeAlways = beside
			started := make(chan struct{}, 1)
			release := make(chan struct{})
			runs := numRuns(t, b, func(ctx context.Context, ev *Event, n int) error {
				if n == 1 {
					started <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			})
			stop := run(t, b)
			ctx := context.Background()
			key := keyNamed("a")
			must(t, b.Observe(ctx, key, doc("a", "1")))
			<-started
			var dones []chan error
			for i, n := range []int{2, 3, 4, 5, 6, 7} {
				if n%2 == 1 {
					must(t, b.Observe(ctx, key, doc("a", strconv.Itoa(n))))
					continue
				}
				done := make(chan error, 1)
				go func() { done <- b.Dispatch(ctx, key, doc("a", strconv.Itoa(n))) }()
				want := len(dones) + 1
				waitFor(t, fmt.Sprintf("Dispatch %d (%d) waiting", n, i), func() bool {
					b.mu.Lock()
					defer b.mu.Unlock()
					return b.q.kq.Awaiting(b.q.keys[key]) == want
				})
				dones = append(dones, done)
			}
			stopped := make(chan error, 1)
			go func() { stopped <- stop() }()
			for i, d := range dones {
				select {
				case err := <-d:
					if !errors.Is(err, ErrClosed) {
						t.Errorf("waiting Dispatch %d returned %v, want ErrClosed", i, err)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("Dispatch %d did not return at shutdown", i)
				}
			}
			select {
			case err := <-stopped:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
			close(release)
			first := runs("a")
			// Restart.
			b2 := newBus(t, &Options{Store: mem, Workers: 1})
			runs2 := numRuns(t, b2, nil)
			stop2 := run(t, b2)
			waitFor(t, "the pending states handled", func() bool {
				r := runs2("a")
				return len(r) > 0 && r[len(r)-1] == 7
			})
			must(t, stop2())
			got := runs2("a")
			t.Logf("first run %v, after restart %v", first, got)
			// Pending updates of one incarnation collapse to the latest
			// (run.go collapse): 7 must be handled, last.
			if len(got) == 0 || got[len(got)-1] != 7 {
				t.Errorf("after restart %v, want to end on 7", got)
			}
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] && got[i] != 1 {
					t.Errorf("after restart out of order: %v", got)
				}
			}
		})
	}
}

// shutdown while a DispatchDelete and a Dispatch of a new
// incarnation wait: both are kept as pending (a deletion and an
// incarnation boundary are never collapsed) and handled after a restart.
func TestDispatchAttackShutdownWaitingDeleteRecreate(t *testing.T) {
	mem := NewMemoryStore()
	inc := func(obj map[string]any) string { uid, _ := Get[string](obj, "metadata.uid"); return uid }
	withUID := func(n int, uid string) map[string]any {
		d := doc("a", strconv.Itoa(n))
		d["metadata"].(map[string]any)["uid"] = uid
		return d
	}
	b := newBus(t, &Options{Store: mem, Workers: 2, MaxBacklog: 1, ShutdownTimeout: 50 * time.Millisecond, Incarnation: inc})
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	handler := func(hold bool, seen *[]string) HandlerFunc {
		return func(ctx context.Context, ev *Event) (Status, error) {
			img, _ := Get[string](ev.Object(), "spec.image")
			mu.Lock()
			*seen = append(*seen, ev.Type.String()+":"+img)
			mu.Unlock()
			if hold && img == "1" {
				started <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return Status{}, ctx.Err()
				}
			}
			return Active(img), nil
		}
	}
	must(t, b.Handle("image", handler(true, &seen), On{Fields: []string{"spec.image"}, Types: []EventType{Create, Update, Delete}}))
	stop := run(t, b)
	ctx := context.Background()
	key := keyNamed("a")
	must(t, b.Observe(ctx, key, withUID(1, "u1")))
	<-started
	d1 := make(chan error, 1)
	go func() { d1 <- b.DispatchDelete(ctx, key, withUID(2, "u1")) }()
	waitFor(t, "delete waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[key]) == 1 })
	d2 := make(chan error, 1)
	go func() { d2 <- b.Dispatch(ctx, key, withUID(3, "u2")) }()
	waitFor(t, "create waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[key]) == 2 })
	must(t, b.Observe(ctx, key, withUID(4, "u2")))
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	for _, d := range []chan error{d1, d2} {
		select {
		case err := <-d:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("waiting call returned %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("waiting call did not return")
		}
	}
	must(t, <-stopped)
	close(release)
	b2 := newBus(t, &Options{Store: mem, Workers: 1, Incarnation: inc})
	var seen2 []string
	must(t, b2.Handle("image", handler(false, &seen2), On{Fields: []string{"spec.image"}, Types: []EventType{Create, Update, Delete}}))
	stop2 := run(t, b2)
	waitFor(t, "pending handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen2) > 0 && seen2[len(seen2)-1] == "update:4" || len(seen2) > 0 && seen2[len(seen2)-1] == "create:4"
	})
	must(t, stop2())
	mu.Lock()
	defer mu.Unlock()
	t.Logf("first %v, after restart %v", seen, seen2)
	if !slices.Contains(seen2, "delete:2") && !slices.Contains(seen2, "delete:1") {
		t.Errorf("the waiting DispatchDelete's deletion was lost: %v", seen2)
	}
}

// Dispatch calls waiting while the key's handler keeps
// failing and Run retries it.
func TestDispatchAttackWhileHandlerFails(t *testing.T) {
	b := newBus(t, &Options{Workers: 2, MaxBacklog: 2, Backoff: Backoff{Initial: 2 * time.Millisecond, Max: 5 * time.Millisecond, Jitter: -1}})
	var failing atomic.Bool
	failing.Store(true)
	var slow atomic.Bool
	slow.Store(true)
	runs := numRuns(t, b, func(ctx context.Context, ev *Event, n int) error {
		if slow.Load() {
			time.Sleep(time.Millisecond)
		}
		if failing.Load() {
			return fmt.Errorf("boom %d", n)
		}
		return nil
	})
	stop := run(t, b)
	defer func() { must(t, stop()) }()
	ctx := context.Background()
	key := keyNamed("a")
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 4 {
		wg.Go(func() {
			for range 25 {
				n := int(next.Add(1))
				err := b.Dispatch(ctx, key, doc("a", strconv.Itoa(n)))
				if err == nil || !strings.Contains(err.Error(), "boom") {
					t.Errorf("Dispatch %d = %v, want its handler's error", n, err)
				}
				if err != nil && strings.Contains(err.Error(), "not dispatched") {
					t.Errorf("Dispatch %d: %v", n, err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			n := int(next.Add(1))
			must(t, b.Observe(ctx, key, doc("a", strconv.Itoa(n))))
			time.Sleep(200 * time.Microsecond)
		}
	})
	wg.Wait()
	failing.Store(false)
	slow.Store(false)
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := b.Settle(sctx); err != nil {
		t.Fatalf("Settle: %v\n%s", err, stacksWith("opbus."))
	}
	got := runs("a")
	last := got[len(got)-1]
	_, slots, err := b.Status(ctx, key)
	must(t, err)
	if slots["image"].Message != strconv.Itoa(last) || slots["image"].Level != LevelActive {
		t.Errorf("status %+v, want Active %d", slots["image"], last)
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			// a Dispatch runs its state after older states: the numbers
			// of one caller's order may interleave, so only report.
			t.Logf("not monotonic at %d: %v %v", i, got[i-1], got[i])
			break
		}
	}
}

// loadStore fails Load of any key fails times, after waiting for gate
// if it is set (the first Load only).
type loadStore struct {
	*MemoryStore
	mu      sync.Mutex
	fails   int
	gate    chan struct{}
	entered chan struct{}
}

func (s *loadStore) Load(ctx context.Context, key Key) ([]byte, error) {
	s.mu.Lock()
	g := s.gate
	s.gate = nil
	s.mu.Unlock()
	if g != nil {
		s.entered <- struct{}{}
		<-g
	}
	s.mu.Lock()
	fail := s.fails > 0
	if fail {
		s.fails--
	}
	s.mu.Unlock()
	if fail {
		return nil, errors.New("load down")
	}
	return s.MemoryStore.Load(ctx, key)
}

// Dispatch calls waiting while the record cannot be loaded.
func TestDispatchAttackWhileLoadFails(t *testing.T) {
	for _, fails := range []int{1, 2, 3, 5} {
		t.Run(strconv.Itoa(fails), func(t *testing.T) {
			gate := make(chan struct{})
			st := &loadStore{MemoryStore: NewMemoryStore(), gate: gate, entered: make(chan struct{}, 1)}
			b := newBus(t, &Options{Store: st, Workers: 2, Backoff: Backoff{Initial: 2 * time.Millisecond, Max: 5 * time.Millisecond, Jitter: -1}})
			runs := numRuns(t, b, nil)
			stop := run(t, b)
			defer func() { must(t, stop()) }()
			ctx := context.Background()
			key := keyNamed("a")
			must(t, b.Observe(ctx, key, doc("a", "1")))
			<-st.entered
			d2 := make(chan error, 1)
			go func() { d2 <- b.Dispatch(ctx, key, doc("a", "2")) }()
			waitFor(t, "d2 waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[key]) == 1 })
			must(t, b.Observe(ctx, key, doc("a", "3")))
			d4 := make(chan error, 1)
			go func() { d4 <- b.Dispatch(ctx, key, doc("a", "4")) }()
			waitFor(t, "d4 waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[key]) == 2 })
			st.mu.Lock()
			st.fails = fails
			st.mu.Unlock()
			close(gate)
			for i, d := range []chan error{d2, d4} {
				select {
				case err := <-d:
					t.Logf("dispatch %d: %v", i, err)
					if err != nil && !strings.Contains(err.Error(), "load down") {
						t.Errorf("Dispatch %d = %v", i, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("Dispatch %d stuck\n%s", i, stacksWith("opbus."))
				}
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := b.Settle(sctx); err != nil {
				t.Fatalf("Settle: %v\n%s", err, stacksWith("opbus."))
			}
			if got := runs("a"); !slices.Equal(got, []int{1, 2, 3, 4}) {
				t.Errorf("handled %v, want [1 2 3 4]", got)
			}
		})
	}
}

// DispatchDelete waiting, and Dispatch of a new
// incarnation while the previous one's deletion is unfinished.
func TestDispatchAttackDeleteAndUnfinishedDeletion(t *testing.T) {
	inc := func(obj map[string]any) string { uid, _ := Get[string](obj, "metadata.uid"); return uid }
	withUID := func(n int, uid string) map[string]any {
		d := doc("a", strconv.Itoa(n))
		d["metadata"].(map[string]any)["uid"] = uid
		return d
	}
	b := newBus(t, &Options{Workers: 2, MaxBacklog: 1, Incarnation: inc, Backoff: Backoff{Initial: 3 * time.Millisecond, Max: 5 * time.Millisecond, Jitter: -1}})
	var mu sync.Mutex
	var seen []string
	var delFails atomic.Int32
	started := make(chan struct{}, 8)
	release := make(chan struct{}, 8)
	var holdOn atomic.Bool
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.Object(), "spec.image")
		mu.Lock()
		seen = append(seen, ev.Type.String()+":"+img)
		mu.Unlock()
		if holdOn.Load() {
			started <- struct{}{}
			<-release
		}
		if ev.Type == Delete && delFails.Load() > 0 {
			delFails.Add(-1)
			return Status{}, errors.New("delete failed")
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}, Types: []EventType{Create, Update, Delete}}))
	stop := run(t, b)
	defer func() { must(t, stop()) }()
	ctx := context.Background()
	key := keyNamed("a")
	snap := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(seen) }

	// 3c: DispatchDelete waits behind a busy pass; a re-create is observed meanwhile.
	holdOn.Store(true)
	must(t, b.Observe(ctx, key, withUID(1, "u1")))
	<-started
	dd := make(chan error, 1)
	go func() { dd <- b.DispatchDelete(ctx, key, withUID(2, "u1")) }()
	waitFor(t, "delete waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[key]) == 1 })
	must(t, b.Observe(ctx, key, withUID(3, "u2")))
	must(t, b.Observe(ctx, key, withUID(4, "u2")))
	holdOn.Store(false)
	release <- struct{}{}
	must(t, <-dd)
	must(t, b.Wait(ctx))
	if got, want := snap(), []string{"create:1", "delete:2", "create:4"}; !slices.Equal(got, want) {
		t.Errorf("3c: handled %v, want %v", got, want)
	}

	// 3e: the deletion of u2 fails and is retried; Dispatch u3 waits for the busy retry.
	mu.Lock()
	seen = nil
	mu.Unlock()
	delFails.Store(3)
	must(t, b.ObserveDelete(ctx, key, withUID(5, "u2")))
	waitFor(t, "the deletion failing", func() bool { return len(snap()) >= 1 })
	holdOn.Store(true)
	<-started // a retry of the deletion, held
	d6 := make(chan error, 1)
	go func() { d6 <- b.Dispatch(ctx, key, withUID(6, "u3")) }()
	waitFor(t, "Dispatch waiting for the retry", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[key]) == 1 })
	must(t, b.Observe(ctx, key, withUID(7, "u3")))
	holdOn.Store(false)
	release <- struct{}{}
	var err6 error
	select {
	case err6 = <-d6:
	case <-time.After(10 * time.Second):
		t.Fatalf("Dispatch stuck\n%s", stacksWith("opbus."))
	}
	t.Logf("Dispatch of u3 while u2's deletion unfinished: %v", err6)
	if err6 != nil && !strings.Contains(err6.Error(), "deletion of its previous incarnation") {
		t.Errorf("Dispatch = %v", err6)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	must(t, b.Settle(sctx))
	got := snap()
	t.Logf("3e handled %v", got)
	if got[len(got)-1] != "create:7" && got[len(got)-1] != "update:7" {
		t.Errorf("3e: ends on %v, want 7", got)
	}
	i6 := slices.IndexFunc(got, func(s string) bool { return strings.HasSuffix(s, ":6") })
	lastDel := -1
	for i, s := range got {
		if strings.HasPrefix(s, "delete") {
			lastDel = i
		}
	}
	if err6 == nil && i6 < 0 {
		t.Errorf("Dispatch returned nil but 6 not handled: %v", got)
	}
	if i6 >= 0 && i6 < lastDel {
		t.Errorf("u3's state handled before u2's deletion finished: %v", got)
	}
}

// Dispatch without Run.
func TestDispatchAttackNoRun(t *testing.T) {
	b := newBus(t, &Options{MaxBacklog: 1})
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	runs := numRuns(t, b, func(ctx context.Context, ev *Event, n int) error {
		if n == 1 {
			started <- struct{}{}
			<-release
		}
		return nil
	})
	ctx := context.Background()
	key := keyNamed("a")
	d1 := make(chan error, 1)
	go func() { d1 <- b.Dispatch(ctx, key, doc("a", "1")) }()
	<-started
	d2 := make(chan error, 1)
	go func() { d2 <- b.Dispatch(ctx, key, doc("a", "2")) }()
	waitFor(t, "d2 waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[key]) == 1 })
	must(t, b.Observe(ctx, key, doc("a", "3")))
	must(t, b.Observe(ctx, key, doc("a", "4")))
	d5 := make(chan error, 1)
	go func() { d5 <- b.Dispatch(ctx, key, doc("a", "5")) }()
	waitFor(t, "d5 waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[key]) == 2 })
	must(t, b.Observe(ctx, key, doc("a", "6")))
	close(release)
	for i, d := range []chan error{d1, d2, d5} {
		select {
		case err := <-d:
			if err != nil {
				t.Errorf("Dispatch %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Dispatch %d stuck", i)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	must(t, b.Wait(wctx))
	if got, want := runs("a"), []int{1, 2, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
}

// a child's change relayed to a parent while a Dispatch on the
// parent waits.
func TestDispatchAttackRelatedParentDispatchWaiting(t *testing.T) {
	for _, backlog := range []int{0, 1, 2} {
		t.Run(strconv.Itoa(backlog), func(t *testing.T) {
			b := newBus(t, &Options{Workers: 2, MaxBacklog: backlog})
			must(t, b.Relate("Deployment", ownersOf))
			started := make(chan struct{}, 1)
			release := make(chan struct{})
			var mu sync.Mutex
			var seen []string
			must(t, b.Handle("ready", func(ctx context.Context, ev *Event) (Status, error) {
				var parts []string
				rel, _ := ev.New[RelatedField].(map[string]any)
				deps, _ := rel["Deployment"].(map[string]any)
				for _, name := range slices.Sorted(maps.Keys(deps)) {
					st, _ := deps[name].(map[string]any)["status"].(map[string]any)
					parts = append(parts, fmt.Sprintf("%s=%v", name, st["readyReplicas"]))
				}
				r, _ := Get[int64](ev.New, "spec.replicas")
				mu.Lock()
				seen = append(seen, fmt.Sprintf("r%d[%s]", r, strings.Join(parts, ",")))
				mu.Unlock()
				if r == 1 {
					started <- struct{}{}
					<-release
				}
				return Active("ok"), nil
			}, On{Kinds: []string{"WebApp"}, Fields: []string{"spec.replicas", "related.Deployment[*].status.readyReplicas"}}))
			stop := run(t, b)
			defer func() { must(t, stop()) }()
			ctx := context.Background()
			w := appKey("w")
			must(t, b.Observe(ctx, w, webAppDoc("w", 1)))
			<-started
			p2 := make(chan error, 1)
			go func() { p2 <- b.Dispatch(ctx, w, webAppDoc("w", 2)) }()
			waitFor(t, "p2 waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[w]) == 1 })
			must(t, b.Observe(ctx, deployKey("d"), deployment("d", 1, "w")))
			must(t, b.Dispatch(ctx, deployKey("e"), deployment("e", 1, "w")))
			must(t, b.Observe(ctx, deployKey("d"), deployment("d", 2, "w")))
			p3 := make(chan error, 1)
			go func() { p3 <- b.Dispatch(ctx, w, webAppDoc("w", 3)) }()
			waitFor(t, "p3 waiting", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.q.kq.Awaiting(b.q.keys[w]) == 2 })
			must(t, b.Observe(ctx, deployKey("d"), deployment("d", 3, "w")))
			must(t, b.Dispatch(ctx, deployKey("e"), deployment("e", 2)))
			close(release)
			must(t, <-p2)
			must(t, <-p3)
			must(t, b.Wait(ctx))
			mu.Lock()
			got := slices.Clone(seen)
			mu.Unlock()
			t.Logf("parent runs %v", got)
			if len(got) < 3 || got[1] != "r2[]" {
				t.Errorf("runs %v: want r2[] right after the held pass (Dispatch's state before related changes observed while it waited)", got)
			}
			if got[len(got)-1] != "r3[d=3]" {
				t.Errorf("runs %v: want to end on r3[d=3]", got)
			}
			i3 := slices.IndexFunc(got, func(s string) bool { return strings.HasPrefix(s, "r3") })
			if i3 >= 0 && got[i3] != "r3[d=2,e=1]" {
				t.Errorf("p3 saw %s, want the related changes observed before it (d=2,e=1): %v", got[i3], got)
			}
		})
	}
}

// Chaos: Observe, ObserveDelete, Dispatch and DispatchDelete on two keys
// from many goroutines, with incarnations, failing handlers, a small
// backlog and writes beside; Run is stopped while calls are in flight and
// a new bus on the store must end on the last accepted state of each key.
func TestDispatchAttackChaosRestart(t *testing.T) {
	var seeds []uint64
	for s := range uint64(atkSeeds) {
		seeds = append(seeds, s+1)
	}
	for _, seed := range seeds {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { atkChaos(t, seed) })
	}
}

type atkEv struct {
	del bool
	n   int
}

func atkChaos(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed*7))
	var rmu sync.Mutex
	rnd := func(n int) int { rmu.Lock(); defer rmu.Unlock(); return rng.IntN(n) }
	mem := NewMemoryStore()
	inc := func(obj map[string]any) string { uid, _ := Get[string](obj, "metadata.uid"); return uid }
	mk := func(name string, n int, uid int) map[string]any {
		d := doc(name, strconv.Itoa(n))
		d["metadata"].(map[string]any)["uid"] = "u" + strconv.Itoa(uid)
		return d
	}
	workers := 1 + int(seed%3)
	beside := seed%2 == 0
	var st Store = mem
	if beside {
		st = &slowStore{MemoryStore: mem, took: 200 * time.Microsecond}
	}
	backoff := Backoff{Initial: time.Millisecond, Max: 3 * time.Millisecond, Jitter: -1}
	b := newBus(t, &Options{Store: st, Workers: workers, MaxBacklog: 1 + int(seed%2), Incarnation: inc, Backoff: backoff, ShutdownTimeout: 200 * time.Millisecond})
	b.lanes.pipeAlways = beside
	var failing atomic.Bool
	failing.Store(true)
	logs := [2]map[string][]atkEv{{}, {}}
	var lmu sync.Mutex
	handler := func(phase int) HandlerFunc {
		return func(ctx context.Context, ev *Event) (Status, error) {
			img, _ := Get[string](ev.Object(), "spec.image")
			n, _ := strconv.Atoi(img)
			lmu.Lock()
			logs[phase][ev.Key.Name] = append(logs[phase][ev.Key.Name], atkEv{ev.Type == Delete, n})
			lmu.Unlock()
			if phase == 0 {
				if n%3 == 0 {
					time.Sleep(300 * time.Microsecond)
				}
				if failing.Load() && rnd(4) == 0 {
					return Status{}, fmt.Errorf("boom %d", n)
				}
			}
			return Active(img), nil
		}
	}
	on := On{Fields: []string{"spec.image"}, Types: []EventType{Create, Update, Delete}}
	must(t, b.Handle("image", handler(0), on))
	rctx, rcancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- b.Run(rctx) }()
	ctx := context.Background()

	type model struct {
		uid  int
		live bool
	}
	var mmu sync.Mutex
	next := 0
	models := map[string]*model{"a": {uid: 1}, "b": {uid: 1}}
	// Every accepted state: the state the bus must end on is the latest,
	// leaving out a deletion observed while no incarnation is live (rule
	// 14 drops it: a Dispatch of an incarnation's first state refused by
	// the stop, then its deletion observed).
	accepts := map[string][]atkEv{}
	var acc sync.Mutex
	accept := func(name string, e atkEv) {
		acc.Lock()
		defer acc.Unlock()
		accepts[name] = append(accepts[name], e)
	}
	var dispatchedOK sync.Map
	stopAt := 150 + rnd(100)
	var issued atomic.Int32
	var stopOnce sync.Once
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for range 60 {
				if int(issued.Add(1)) == stopAt {
					stopOnce.Do(func() { rcancel() })
				}
				name := []string{"a", "b"}[rnd(2)]
				op := rnd(10)
				mmu.Lock()
				next++
				n := next
				m := models[name]
				var obj map[string]any
				del := false
				switch {
				case m.live && op == 0:
					del = true
					obj = mk(name, n, m.uid)
					m.live = false
					m.uid++
				case op == 1:
					m.uid++ // a new incarnation without an observed deletion
					fallthrough
				default:
					obj = mk(name, n, m.uid)
					m.live = true
				}
				dispatch := g%2 == 0 || op >= 7
				s0 := busSeq(b)
				var done chan error
				if !dispatch {
					var err error
					if del {
						err = b.ObserveDelete(ctx, keyNamed(name), obj)
					} else {
						err = b.Observe(ctx, keyNamed(name), obj)
					}
					mmu.Unlock()
					if err == nil {
						accept(name, atkEv{del, n})
					} else if !errors.Is(err, ErrClosed) {
						t.Errorf("Observe %d: %v", n, err)
					}
					continue
				}
				done = make(chan error, 1)
				go func() {
					if del {
						done <- b.DispatchDelete(ctx, keyNamed(name), obj)
					} else {
						done <- b.Dispatch(ctx, keyNamed(name), obj)
					}
				}()
				var err error
				gotErr := false
				for busSeq(b) == s0 {
					select {
					case err = <-done:
						gotErr = true
					default:
						runtime.Gosched()
						continue
					}
					break
				}
				mmu.Unlock()
				if !gotErr {
					select {
					case err = <-done:
					case <-time.After(20 * time.Second):
						t.Errorf("Dispatch %d stuck\n%s", n, stacksWith("opbus."))
						return
					}
				}
				switch {
				case err == nil:
					accept(name, atkEv{del, n})
					dispatchedOK.Store(n, atkEv{del, n})
				case err == ErrClosed:
				case errors.Is(err, ErrClosed), strings.Contains(err.Error(), "boom"), strings.Contains(err.Error(), "not finished"):
					accept(name, atkEv{del, n})
				default:
					t.Errorf("Dispatch %d (del %v): %v", n, del, err)
					accept(name, atkEv{del, n})
				}
			}
		})
	}
	wg.Wait()
	stopOnce.Do(func() { rcancel() })
	select {
	case err := <-runDone:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Run did not return\n%s", stacksWith("opbus."))
	}
	lmu.Lock()
	for name, l := range logs[0] {
		for i := 1; i < len(l); i++ {
			if l[i].n < l[i-1].n {
				t.Errorf("%s: phase 1 out of order at %d: %v", name, i, l[max(0, i-4):min(len(l), i+4)])
				break
			}
		}
	}
	handled := map[int]bool{}
	for _, l := range logs[0] {
		for _, e := range l {
			handled[e.n] = true
		}
	}
	lmu.Unlock()
	dispatchedOK.Range(func(k, v any) bool {
		if !handled[k.(int)] {
			t.Errorf("Dispatch %v returned nil, not handled", v)
		}
		return true
	})

	// Restart.
	failing.Store(false)
	b2 := newBus(t, &Options{Store: mem, Workers: 2, Incarnation: inc, Backoff: backoff})
	must(t, b2.Handle("image", handler(1), on))
	stop2 := run(t, b2)
	time.Sleep(100 * time.Millisecond)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b2.Settle(sctx); err != nil {
		t.Fatalf("Settle after restart: %v", err)
	}
	must(t, stop2())
	lmu.Lock()
	defer lmu.Unlock()
	accepted := map[string]atkEv{}
	for name, l := range accepts {
		// In the order issued, which is the order queued: a deletion
		// while no incarnation is live (none of its states was accepted,
		// nor any since the last deletion) is dropped.
		slices.SortFunc(l, func(x, y atkEv) int { return x.n - y.n })
		live := false
		for _, e := range l {
			if e.del && !live {
				continue
			}
			live = !e.del
			accepted[name] = e
		}
	}
	for _, name := range []string{"a", "b"} {
		want, ok := accepted[name]
		if !ok {
			continue
		}
		l := logs[1][name]
		if len(l) == 0 {
			l = logs[0][name]
		}
		if len(l) == 0 || l[len(l)-1] != want {
			t.Errorf("%s: ends on %v, want %v (phase1 tail %v, phase2 %v)", name, l[max(0, len(l)-1):], want, tail(logs[0][name]), logs[1][name])
		}
	}
}

func tail(l []atkEv) []atkEv { return l[max(0, len(l)-6):] }

var atkSeeds = func() int {
	if n, err := strconv.Atoi(os.Getenv("OPBUS_ATTACK_SEEDS")); err == nil {
		return n
	}
	return 6
}()
