package opbus

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Adversarial tests of the write stage (rule 22a).

// a22Store is a MemoryStore whose Saves can be made to fail or to block
// (until their context ends), per key name, and which counts them.
type a22Store struct {
	*MemoryStore
	mu       sync.Mutex
	fail     map[string]int  // Saves of the name still to fail
	block    map[string]int  // Saves of the name still to block on ctx
	slowExit map[string]bool // a blocked Save of the name sleeps after its ctx ends
	saves    map[string]int
	failed   map[string]int
	afterCtx map[string]int // Saves begun with an already-ended context
	blocked  chan string
	inflight *atomic.Int32 // shared with a sink: concurrent writes
	maxIn    *atomic.Int32
	frozen   atomic.Bool // set after Run returned: counts late writes
	late     atomic.Int32
}

func newA22Store() *a22Store {
	return &a22Store{MemoryStore: NewMemoryStore(), fail: map[string]int{}, block: map[string]int{},
		slowExit: map[string]bool{}, saves: map[string]int{}, failed: map[string]int{}, afterCtx: map[string]int{},
		blocked: make(chan string, 64), inflight: &atomic.Int32{}, maxIn: &atomic.Int32{}}
}

func (s *a22Store) enter() func() {
	n := s.inflight.Add(1)
	for {
		m := s.maxIn.Load()
		if n <= m || s.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { s.inflight.Add(-1) }
}

func (s *a22Store) Save(ctx context.Context, key Key, data []byte) error {
	defer s.enter()()
	if s.frozen.Load() {
		s.late.Add(1)
	}
	s.mu.Lock()
	s.saves[key.Name]++
	if ctx.Err() != nil {
		s.afterCtx[key.Name]++
	}
	fail := s.fail[key.Name] > 0
	if fail {
		s.fail[key.Name]--
		s.failed[key.Name]++
	}
	block := s.block[key.Name] > 0
	if block {
		s.block[key.Name]--
	}
	slow := s.slowExit[key.Name]
	s.mu.Unlock()
	if fail {
		return errors.New("store down")
	}
	if block {
		s.blocked <- key.Name
		<-ctx.Done()
		if slow {
			time.Sleep(300 * time.Millisecond)
		}
		return ctx.Err()
	}
	time.Sleep(100 * time.Microsecond)
	return s.MemoryStore.Save(ctx, key, data)
}

func (s *a22Store) get(m map[string]int, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return m[name]
}

func (s *a22Store) set(m map[string]int, name string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m[name] = n
}

// a22Sink records the last status per key name; it can fail every nth
// call, and shares the store's in-flight counter.
type a22Sink struct {
	store   *a22Store
	mu      sync.Mutex
	calls   int
	failNth int
	last    map[string]string
	late    atomic.Int32
	delay   time.Duration
}

func (s *a22Sink) PutStatus(ctx context.Context, key Key, obj map[string]any, overall Status, slots Slots) error {
	defer s.store.enter()()
	if s.store.frozen.Load() {
		s.late.Add(1)
	}
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.failNth > 0 && s.calls%s.failNth == 0 {
		return errors.New("api server says no")
	}
	if s.last == nil {
		s.last = map[string]string{}
	}
	s.last[key.Name] = overall.Message
	return nil
}

func (s *a22Sink) lastOf(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[name]
}

// imageLog is a handler on spec.image that logs what it saw per key name.
type imageLog struct {
	mu   sync.Mutex
	seen map[string][]string
	hook func(ctx context.Context, ev *Event, img string)
}

func (h *imageLog) handle(ctx context.Context, ev *Event) (Status, error) {
	img, _ := Get[string](ev.New, "spec.image")
	h.mu.Lock()
	if h.seen == nil {
		h.seen = map[string][]string{}
	}
	h.seen[ev.Key.Name] = append(h.seen[ev.Key.Name], img)
	h.mu.Unlock()
	if h.hook != nil {
		h.hook(ctx, ev, img)
	}
	return Active(img), nil
}

func (h *imageLog) of(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen[name]...)
}

func startRun(b *Bus) (cancel context.CancelCauseFunc, done chan error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	done = make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	// Wait until Run has started: before, Wait and Settle dispatch on
	// their caller's goroutine, outside Run's Workers and Writers.
	for {
		b.mu.Lock()
		r := b.running
		b.mu.Unlock()
		if r {
			return cancel, done
		}
		time.Sleep(time.Millisecond)
	}
}

func waitRun(t *testing.T, done chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("Run did not return within %v\n%s", within, buf)
		return nil
	}
}

func settle(t *testing.T, b *Bus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Settle(ctx); err != nil {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("Settle: %v\n%s", err, buf)
	}
}

// Attack 1: the merged write fails. The retry writes what the merged
// passes handled; no handler runs twice for a value; status ends right.
func TestAttack22FailedMergedWrite(t *testing.T) {
	for _, what := range []string{"store", "sink"} {
		t.Run(what, func(t *testing.T) {
			store := newA22Store()
			sink := &a22Sink{store: store}
			b := newBus(t, &Options{Store: store, Sink: sink, Workers: 1, Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond}})
			gate, started := make(chan struct{}), make(chan struct{}, 1)
			h := &imageLog{hook: func(ctx context.Context, ev *Event, img string) {
				if img == "v1" {
					started <- struct{}{}
					<-gate
				}
			}}
			must(t, b.Handle("image", h.handle, On{Fields: []string{"spec.image"}}))
			cancel, done := startRun(b)
			ctx := context.Background()
			must(t, b.Observe(ctx, podKey, doc("web", "v1")))
			<-started
			for _, v := range []string{"v2", "v3"} {
				must(t, b.Observe(ctx, podKey, doc("web", v)))
			}
			if what == "store" {
				store.set(store.fail, "web", 1)
			} else {
				sink.failNth = 1 // every call fails...
			}
			close(gate)
			if what == "sink" {
				waitFor(t, "the failed publish", func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return sink.calls >= 1 })
				sink.mu.Lock()
				sink.failNth = 0 // ...until now
				sink.mu.Unlock()
			}
			settle(t, b)
			cancel(nil)
			must(t, waitRun(t, done, 10*time.Second))

			equal(t, []string{"v1", "v2", "v3"}, h.of("web"), "each value handled once")
			equal(t, uint64(2), b.Stats().Merged)
			if what == "store" {
				equal(t, 1, store.get(store.failed, "web"))
				equal(t, 2, store.get(store.saves, "web"), "one failed merged write, one retry")
			}
			equal(t, "v3", sink.lastOf("web"))
			st, _, err := b.Status(ctx, podKey)
			must(t, err)
			equal(t, "v3", st.Message)

			b2 := newBus(t, &Options{Store: store.MemoryStore})
			h2 := &imageLog{}
			must(t, b2.Handle("image", h2.handle, On{Fields: []string{"spec.image"}}))
			must(t, b2.Dispatch(ctx, podKey, doc("web", "v3")))
			equal(t, []string(nil), h2.of("web"), "the retried write holds v3 as handled")
		})
	}
}

// Attack 2: one writer behind four workers, a slow sink that fails every
// fourth call, many keys: no key starves, per-key order holds, at most
// one write at a time, and Settle returns only once writes are done.
func TestAttack22OneWriterSlowFailingSink(t *testing.T) {
	store := newA22Store()
	sink := &a22Sink{store: store, failNth: 4, delay: 200 * time.Microsecond}
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 4, Writers: 1, Backoff: Backoff{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond}})
	h := &imageLog{}
	must(t, b.Handle("image", h.handle, On{Fields: []string{"spec.image"}}))
	cancel, done := startRun(b)
	ctx := context.Background()
	const keys, states = 16, 6
	for v := 1; v <= states; v++ {
		for k := range keys {
			name := fmt.Sprintf("k%02d", k)
			must(t, b.Observe(ctx, keyNamed(name), doc(name, fmt.Sprintf("v%d", v))))
		}
	}
	settle(t, b)
	equal(t, int32(0), store.inflight.Load(), "a write in flight after Settle")
	var want []string
	for v := 1; v <= states; v++ {
		want = append(want, fmt.Sprintf("v%d", v))
	}
	for k := range keys {
		name := fmt.Sprintf("k%02d", k)
		equal(t, want, h.of(name), name+": every state once, in order")
		equal(t, fmt.Sprintf("v%d", states), sink.lastOf(name), name+": last status")
	}
	if m := store.maxIn.Load(); m > 1 {
		t.Errorf("%d writes at once with Writers 1", m)
	}
	cancel(nil)
	must(t, waitRun(t, done, 10*time.Second))
	t.Logf("stats %+v", b.Stats())
}

// Attack 3a: shutdown while the (merged) write blocks in Save until its
// context ends: Run returns, and the next bus runs nothing again for
// values handled (their record is saved with the pending states).
func TestAttack22ShutdownDuringBlockedSave(t *testing.T) {
	for _, merged := range []bool{false, true} {
		t.Run(fmt.Sprint("merged=", merged), func(t *testing.T) {
			store := newA22Store()
			b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: 50 * time.Millisecond})
			gate, started := make(chan struct{}), make(chan struct{}, 1)
			h := &imageLog{hook: func(ctx context.Context, ev *Event, img string) {
				if merged && img == "v1" {
					started <- struct{}{}
					<-gate
				}
			}}
			must(t, b.Handle("image", h.handle, On{Fields: []string{"spec.image"}}))
			cancel, done := startRun(b)
			ctx := context.Background()
			store.set(store.block, "web", 1)
			must(t, b.Observe(ctx, podKey, doc("web", "v1")))
			if merged {
				<-started
				must(t, b.Observe(ctx, podKey, doc("web", "v2")))
				must(t, b.Observe(ctx, podKey, doc("web", "v3")))
				close(gate)
				<-store.blocked
			} else {
				<-store.blocked
				must(t, b.Observe(ctx, podKey, doc("web", "v2")))
				must(t, b.Observe(ctx, podKey, doc("web", "v3")))
			}
			cancel(nil)
			must(t, waitRun(t, done, 10*time.Second))
			first := h.of("web")

			b2 := newBus(t, &Options{Store: store.MemoryStore})
			h2 := &imageLog{}
			must(t, b2.Handle("image", h2.handle, On{Fields: []string{"spec.image"}}))
			stop := run(t, b2)
			waitFor(t, "resumed", func() bool { return b2.Stats().Dispatched > 0 })
			must(t, b2.Wait(ctx))
			must(t, stop())
			t.Logf("first run %v, second run %v", first, h2.of("web"))
			if merged {
				equal(t, []string{"v1", "v2", "v3"}, first)
				equal(t, []string(nil), h2.of("web"), "v3 was handled; its record went with the pending state")
			} else {
				equal(t, []string{"v1"}, first)
				equal(t, []string{"v3"}, h2.of("web"), "the pending states collapse to v3, handled once")
			}
		})
	}
}

// Attack 3b: halt while one write blocks and another pass waits for the
// write slot: no write starts after the halt, none after Run returns.
func TestAttack22HaltWithQueuedWriters(t *testing.T) {
	store := newA22Store()
	sink := &a22Sink{store: store}
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 3, Writers: 2})
	if b.stripe(keyNamed("a")) == b.stripe(keyNamed("b")) || b.stripe(keyNamed("c")) == b.stripe(keyNamed("b")) {
		t.Skip("stripes collide")
	}
	h := &imageLog{}
	must(t, b.Handle("image", h.handle, On{Fields: []string{"spec.image"}}))
	store.set(store.block, "a", 1)
	store.set(store.block, "c", 1)
	store.slowExit["c"] = true // its Save returns 300ms after the halt
	cancel, done := startRun(b)
	ctx := context.Background()
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	<-store.blocked
	must(t, b.Observe(ctx, keyNamed("c"), doc("c", "v1")))
	<-store.blocked
	must(t, b.Observe(ctx, keyNamed("b"), doc("b", "v1")))
	waitFor(t, "b handled, waiting for a write slot", func() bool { return len(h.of("b")) == 1 })
	time.Sleep(20 * time.Millisecond)
	cancel(fmt.Errorf("lease lost: %w", ErrHalt))
	must(t, waitRun(t, done, 10*time.Second))
	store.frozen.Store(true)
	time.Sleep(400 * time.Millisecond)
	equal(t, int32(0), store.late.Load(), "Saves after Run returned")
	equal(t, int32(0), sink.late.Load(), "PutStatus after Run returned")
	data, err := store.Load(ctx, keyNamed("b"))
	must(t, err)
	if n := store.get(store.saves, "b"); n > 0 || data != nil {
		t.Errorf("b's pass was in flight at the halt, waiting for a write slot: %d Save(s) of b began after it (%d with Run's context already cancelled by the halt); record stored: %s",
			n, store.get(store.afterCtx, "b"), data)
	}
}

// Attack 4: a handler dispatches another key synchronously while Run runs
// (and that key is also observed), with one writer.
func TestAttack22DispatchFromHandler(t *testing.T) {
	store := newA22Store()
	sink := &a22Sink{store: store}
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 2, Writers: 1})
	var derr []error
	var mu sync.Mutex
	h := &imageLog{}
	h.hook = func(ctx context.Context, ev *Event, img string) {
		if ev.Key.Name != "a" {
			return
		}
		err := b.Dispatch(ctx, keyNamed("b"), doc("b", "from-a-"+img))
		mu.Lock()
		derr = append(derr, err)
		mu.Unlock()
	}
	must(t, b.Handle("image", h.handle, On{Fields: []string{"spec.image"}}))
	cancel, done := startRun(b)
	ctx := context.Background()
	for v := 1; v <= 8; v++ {
		must(t, b.Observe(ctx, keyNamed("a"), doc("a", fmt.Sprintf("v%d", v))))
		must(t, b.Observe(ctx, keyNamed("b"), doc("b", fmt.Sprintf("obs-v%d", v))))
	}
	settle(t, b)
	cancel(nil)
	must(t, waitRun(t, done, 10*time.Second))
	mu.Lock()
	for _, err := range derr {
		if err != nil {
			t.Errorf("Dispatch from a handler: %v", err)
		}
	}
	mu.Unlock()
	equal(t, []string{"v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8"}, h.of("a"))
	seenB := h.of("b")
	if len(seenB) < 8 {
		t.Errorf("b handled %v", seenB)
	}
	last := seenB[len(seenB)-1]
	equal(t, last, sink.lastOf("b"), "b's last status")
	equal(t, "v8", sink.lastOf("a"), "a's last status")
	b2 := newBus(t, &Options{Store: store.MemoryStore})
	h2 := &imageLog{}
	must(t, b2.Handle("image", h2.handle, On{Fields: []string{"spec.image"}}))
	must(t, b2.Dispatch(ctx, keyNamed("b"), doc("b", last)))
	must(t, b2.Dispatch(ctx, keyNamed("a"), doc("a", "v8")))
	equal(t, []string(nil), h2.of("b"), "b's last value is durable")
	equal(t, []string(nil), h2.of("a"), "a's last value is durable")
	t.Logf("stats %+v; b saw %v", b.Stats(), seenB)
}

// Attack 5: one worker, one writer, related objects and timers.
func TestAttack22OneWriterRelatedTimers(t *testing.T) {
	store := newA22Store()
	b := newBus(t, &Options{Store: store, Workers: 1, Writers: 1})
	must(t, b.Relate("Deployment", ownersOf))
	r := &readiness{}
	must(t, b.Handle("ready", r.handle, On{Kinds: []string{"WebApp"}, Fields: []string{"related.Deployment[*].status.readyReplicas"}}))
	var ticks atomic.Int32
	must(t, b.Handle("poll", func(ctx context.Context, ev *Event) (Status, error) {
		ticks.Add(1)
		return Active("polled"), nil
	}, On{Kinds: []string{"WebApp"}, Every: 7 * time.Millisecond}))
	cancel, done := startRun(b)
	ctx := context.Background()
	for i := range 4 {
		must(t, b.Observe(ctx, appKey(fmt.Sprintf("app%d", i)), webAppDoc(fmt.Sprintf("app%d", i), 3)))
	}
	for n := 0; n < 40; n++ {
		app := fmt.Sprintf("app%d", n%4)
		must(t, b.Observe(ctx, deployKey(fmt.Sprintf("d%d", n%8)), deployment(fmt.Sprintf("d%d", n%8), n, app)))
		if n%10 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	wctx, wc := context.WithTimeout(ctx, 20*time.Second)
	defer wc()
	if err := b.Wait(wctx); err != nil {
		buf := make([]byte, 1<<20)
		t.Fatalf("Wait: %v\n%s", err, buf[:runtime.Stack(buf, true)])
	}
	waitFor(t, "ticks", func() bool { return ticks.Load() >= 8 })
	cancel(nil)
	must(t, waitRun(t, done, 10*time.Second))
	for i := range 4 {
		if len(r.of(fmt.Sprintf("app%d", i))) == 0 {
			t.Errorf("app%d never saw its deployments", i)
		}
	}
	t.Logf("stats %+v, ticks %d", b.Stats(), ticks.Load())
}

// Attack 6: Options.Writers validation and defaults.
func TestAttack22WritersOption(t *testing.T) {
	for _, n := range []int{-1, -1 << 40} {
		if _, err := New(&Options{Writers: n}); err == nil {
			t.Errorf("Writers %d accepted", n)
		}
	}
	b := newBus(t, &Options{})
	equal(t, 16, b.cfg.writers, "default 4 × 4 workers")
	b = newBus(t, &Options{Workers: 3})
	equal(t, 12, b.cfg.writers)
	b = newBus(t, &Options{Workers: 3, Writers: 1})
	equal(t, 1, b.cfg.writers)
	// 4 × Workers would overflow: such counts are refused, naming the option.
	for _, o := range []Options{{Workers: 1 << 62}, {Writers: 1 << 62}} {
		if _, err := New(&o); err == nil || !strings.Contains(err.Error(), "expected at most 65536") {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	b = newBus(t, &Options{Workers: 1 << 16})
	equal(t, 1<<16, b.cfg.writers, "the default writers are capped as Workers are")
}
