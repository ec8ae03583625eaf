package opbus

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Adversarial tests of rule 22c: a key's write runs beside its next pass,
// and the key is parked on its write (pipeline.go).

// atkStore is a MemoryStore whose Saves of held names wait for a token of
// their name (or for their context), whose Saves can be made to fail, and
// which counts Saves and notes those made after freeze.
type atkStore struct {
	*MemoryStore
	mu      sync.Mutex
	gates   map[string]chan struct{} // a held name's Save takes a token, or passes once it is closed
	fail    map[string]int           // Saves of the name still to fail (once past their gate); -1: every one
	saves   map[string]int
	started chan string // the name of each held Save as it starts to wait
	runOnly bool        // hold only the writes of Run's passes (see runsSave); shutdown's saves pass
	lag     time.Duration
	lagNth  int // if set, only every lagNth Save lags
	failNth int // if set, every failNth Save (of any name) fails
	n       int // Saves so far, of any name
	frozen  atomic.Bool
	late    atomic.Int32
	lateLog []string
}

func newAtkStore() *atkStore {
	return &atkStore{MemoryStore: NewMemoryStore(), gates: map[string]chan struct{}{}, fail: map[string]int{},
		saves: map[string]int{}, started: make(chan string, 4096)}
}

// hold makes the Saves of name wait.
func (s *atkStore) hold(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gates[name] = make(chan struct{}, 1024)
}

// let lets n held Saves of name through.
func (s *atkStore) let(name string, n int) {
	s.mu.Lock()
	g := s.gates[name]
	s.mu.Unlock()
	for range n {
		g <- struct{}{}
	}
}

// open lets every Save of name through from now on.
func (s *atkStore) open(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.gates[name]; g != nil {
		close(g)
		delete(s.gates, name)
	}
}

func (s *atkStore) setFail(name string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[name] = n
}

func (s *atkStore) savesOf(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves[name]
}

func (s *atkStore) Save(ctx context.Context, key Key, data []byte) error {
	s.mu.Lock()
	if s.frozen.Load() {
		s.late.Add(1)
		s.lateLog = append(s.lateLog, key.Name)
	}
	s.saves[key.Name]++
	s.n++
	nth := s.n
	gate := s.gates[key.Name]
	if s.runOnly {
		if !runsSave(ctx) {
			gate = nil // shutdown's save of pending states
		}
	}
	s.mu.Unlock()
	if gate != nil {
		select {
		case s.started <- key.Name:
		default:
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	fail := s.failNth > 0 && nth%s.failNth == 0
	if n := s.fail[key.Name]; n != 0 {
		fail = true
		if n > 0 {
			s.fail[key.Name]--
		}
	}
	s.mu.Unlock()
	if s.lag > 0 && (s.lagNth == 0 || nth%s.lagNth == 0) {
		time.Sleep(s.lag)
	}
	if fail {
		return errors.New("store down")
	}
	return s.MemoryStore.Save(ctx, key, data)
}

// runsSave reports whether a Save with ctx is made by one of Run's
// passes or their writes: their context is Run's, cancelled by a halt or
// at the end of the shutdown timeout, with no deadline; shutdown's save of
// pending states has the shutdown timeout's deadline.
func runsSave(ctx context.Context) bool {
	_, deadline := ctx.Deadline()
	return ctx.Done() != nil && !deadline
}

// waitStarted waits for a held Save of name to start.
func (s *atkStore) waitStarted(t *testing.T, name string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case n := <-s.started:
			if n == name {
				return
			}
		case <-deadline:
			t.Fatalf("no held Save of %s started", name)
		}
	}
}

// isParked reports whether the key named name is parked on its write.
func isParked(b *Bus, name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ks := b.q.keys[keyNamed(name)]
	if ks == nil {
		return false
	}
	return b.lanes.parked.Parked(ks)
}

// stacksWith returns the stacks of the goroutines whose stack holds fn,
// for a failure's diagnosis.
func stacksWith(fn string) string {
	buf := make([]byte, 1<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, fn) {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// eventually reports whether cond holds within d.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// noRerun checks on a fresh bus over mem that the latest value of each
// name is durable as handled: a Dispatch of it runs nothing.
func noRerun(t *testing.T, mem *MemoryStore, latest map[string]string) {
	t.Helper()
	b := newBus(t, &Options{Store: mem})
	runs := imageRuns(t, b)
	for n, img := range latest {
		must(t, b.Dispatch(context.Background(), keyNamed(n), doc(n, img)))
		if got := runs(n); len(got) != 0 {
			t.Errorf("%s: a handler ran again for %s, whose record should be durable: %v", n, img, got)
		}
	}
}

// resume runs a new bus (with imageRuns, and also prepare's handlers) on
// mem until every state left pending there is handled, and returns what
// imageRuns saw.
func resume(t *testing.T, mem *MemoryStore, prepare func(b *Bus)) func(name string) []string {
	t.Helper()
	ctx := context.Background()
	b := newBus(t, &Options{Store: mem, Workers: 1, Writers: 1})
	runs := imageRuns(t, b)
	if prepare != nil {
		prepare(b)
	}
	keys, err := mem.Keys(ctx)
	must(t, err)
	var pending []Key
	for _, k := range keys {
		rec, err := b.readRecord(ctx, k, b.reg.index)
		must(t, err)
		if rec != nil && len(rec.States()) > 0 {
			pending = append(pending, k)
		}
	}
	cancel, done := startRun(b)
	// Run lists the pending keys after it has started: wait until it has
	// scheduled each, or Settle may find nothing to do yet.
	waitFor(t, "the pending keys resumed", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, k := range pending {
			if _, ok := b.q.keys[k]; !ok {
				return false
			}
		}
		return true
	})
	settle(t, b)
	cancel(nil)
	must(t, waitRun(t, done, 5*time.Second))
	for _, k := range keys {
		rec, err := b.readRecord(ctx, k, b.reg.index)
		must(t, err)
		if rec != nil && len(rec.States()) > 0 {
			t.Errorf("%v: states still pending after the restart settled", k)
		}
	}
	return runs
}

// With a key's write hanging, states queued at once run beside it, 8 of
// them merged into the queued write; the 9th cannot merge and must wait for
// the write before its own, but it must not wait in a handler slot: with
// one worker, another key's handler still runs (rule 22c: the key is held
// by its write, not by one of Run's goroutines).
func TestAttack22cNinthQueuedPassFreesWorker(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 1})
	b.lanes.pipeAlways = true
	gate := make(chan struct{})
	var mu sync.Mutex
	ran := map[string][]string{}
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		ran[ev.Key.Name] = append(ran[ev.Key.Name], img)
		mu.Unlock()
		if ev.Key.Name == "a" && img == "v2" {
			<-gate // until the rest of a's states are queued
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	runs := func(n string) []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran[n])
	}
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a") // v1's write hangs
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	waitFor(t, "a's v2 handler", func() bool { return len(runs("a")) == 2 })
	var want []string
	for i := 1; i <= 12; i++ {
		want = append(want, fmt.Sprint("v", i))
		if i > 2 {
			must(t, b.Observe(ctx, keyNamed("a"), doc("a", fmt.Sprint("v", i))))
		}
	}
	close(gate)
	waitFor(t, "a's passes up to v9", func() bool { return len(runs("a")) >= 9 })
	must(t, b.Observe(ctx, keyNamed("b"), doc("b", "v1")))
	if !eventually(time.Second, func() bool { return len(runs("b")) == 1 }) {
		t.Errorf("with a's write hanging, b's handler did not run in 1 s: a ran %v; goroutines waiting for a write to return:\n%s", runs("a"), stacksWith("(*Bus).join"))
	}
	store.open("a")
	settle(t, b)
	equal(t, want, runs("a"))
	equal(t, []string{"v1"}, runs("b"))
	must(t, stop())
	noRerun(t, store.MemoryStore, map[string]string{"a": "v12", "b": "v1"})
}

// A deletion of a key whose write hangs runs its delete handler at once;
// the deletion then waits for the write before it deletes the record, but
// not in a handler slot: with one worker, another key's handler still runs.
func TestAttack22cDeletionBesideHangingWriteFreesWorker(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 1})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	var deleted atomic.Int32
	must(t, b.Handle("gone", func(ctx context.Context, ev *Event) (Status, error) {
		deleted.Add(1)
		return Status{}, nil
	}, On{Types: []EventType{Delete}}))
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	must(t, b.ObserveDelete(ctx, keyNamed("a"), doc("a", "v1")))
	waitFor(t, "a's delete handler beside its write", func() bool { return deleted.Load() == 1 })
	must(t, b.Observe(ctx, keyNamed("b"), doc("b", "v1")))
	if !eventually(time.Second, func() bool { return len(runs("b")) == 1 }) {
		t.Errorf("with a's write hanging and its deletion waiting for it, b's handler did not run in 1 s; goroutines waiting for a write to return:\n%s", stacksWith("(*Bus).join"))
	}
	store.open("a")
	settle(t, b)
	equal(t, int32(1), deleted.Load())
	equal(t, []string{"v1"}, runs("b"))
	data, err := store.Load(ctx, keyNamed("a"))
	must(t, err)
	if !isTombstone(data) {
		t.Errorf("a's record was left after its deletion, not a tombstone: %s", data)
	}
	must(t, stop())
}

// States that arrive one at a time while a write hangs each take the
// parked key over and hold their write; rule 22c says further passes merge
// into the queued write, up to maxQueued passes a write. maxQueued+6 states, each
// observed once the pass before has ended, beside one hanging write: they
// may run beside it or (past the bound) wait for it, but once it returns
// they must need more than one write after it.
func TestAttack22cHeldPassesBounded(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 1})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()
	idle := func() bool { // no pass of a holds a handler slot
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.lanes.handling == 0
	}

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	const n = maxQueued + 6
	beside := 1
	for i := 2; i <= n; i++ {
		must(t, b.Observe(ctx, keyNamed("a"), doc("a", fmt.Sprint("v", i))))
		if beside == i-1 && eventually(200*time.Millisecond, func() bool { return len(runs("a")) == i && idle() }) {
			beside = i
		}
	}
	t.Logf("v2 to v%d ran beside v1's hanging write", beside)
	equal(t, 1, store.savesOf("a"), "writes begun while v1's hangs")
	store.open("a")
	settle(t, b)
	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprint("v", i))
	}
	equal(t, want, runs("a"))
	// v1's write, then the 19 passes after it in writes of at most 8.
	if got, least := store.savesOf("a"), 1+(n-1+maxQueued-1)/maxQueued; got < least {
		t.Errorf("%d passes after one hanging write (%d of them beside it): %d writes, want at least %d (at most %d passes a write)", n-1, beside-1, got, least, maxQueued)
	}
	must(t, stop())
	noRerun(t, store.MemoryStore, map[string]string{"a": fmt.Sprint("v", n)})
}

// Shutdown while the writes of many keys hang (one write slot, every
// key parked on its write or waiting for the slot, passes held beside
// them, more states queued): Run returns, and a new bus on the store
// handles each key's latest value if it was not handled, and re-runs no
// value that was.
func TestAttack22cShutdownParkedRestart(t *testing.T) {
	for _, third := range []bool{false, true} {
		t.Run(fmt.Sprint("third state ", third), func(t *testing.T) {
			store := newAtkStore()
			store.runOnly = true
			var names []string
			for i := range 8 {
				n := fmt.Sprint("k", i)
				names = append(names, n)
				store.hold(n)
			}
			b := newBus(t, &Options{Store: store, Workers: 1, Writers: 1, ShutdownTimeout: 50 * time.Millisecond})
			b.lanes.pipeAlways = true
			runs := imageRuns(t, b)
			stop := run(t, b)
			ctx := context.Background()
			latest := map[string]string{}
			for _, img := range []string{"v1", "v2"} {
				for _, n := range names {
					must(t, b.Observe(ctx, keyNamed(n), doc(n, img)))
					latest[n] = img
				}
				waitFor(t, "every key's "+img, func() bool {
					for _, n := range names {
						if !slices.Contains(runs(n), img) {
							return false
						}
					}
					return true
				})
			}
			if third {
				for _, n := range names {
					must(t, b.Observe(ctx, keyNamed(n), doc(n, "v3")))
					latest[n] = "v3"
				}
			}
			done := make(chan error, 1)
			go func() { done <- stop() }()
			select {
			case err := <-done:
				must(t, err)
			case <-time.After(5 * time.Second):
				t.Fatalf("Run did not return with writes hanging\n%s", stacksWith("opbus"))
			}
			first := map[string][]string{}
			for _, n := range names {
				first[n] = runs(n)
			}

			runs2 := resume(t, store.MemoryStore, nil)
			for _, n := range names {
				again := runs2(n)
				for _, img := range again {
					if slices.Contains(first[n], img) {
						t.Errorf("%s: %s ran again after the restart (first run %v, second %v)", n, img, first[n], again)
					}
					if img != latest[n] {
						t.Errorf("%s: %s ran after the restart, not the latest %s", n, img, latest[n])
					}
				}
				if len(again) > 1 {
					t.Errorf("%s: ran %d times after the restart: %v", n, len(again), again)
				}
				if !slices.Contains(first[n], latest[n]) && !slices.Contains(again, latest[n]) {
					t.Errorf("%s: the latest value %s was never handled (first run %v, second %v)", n, latest[n], first[n], again)
				}
			}
			noRerun(t, store.MemoryStore, latest)
		})
	}
}

// Shutdown while a key's write hangs, a pass beside it holds its write,
// and the next pass's handler ignores its context: Run returns, the stuck
// pass writes nothing after it did, and a restart handles the stuck
// pass's state once, and no value the held pass handled (rule 16, 22c).
func TestAttack22cShutdownAbandonsPassBesideWrite(t *testing.T) {
	store := newAtkStore()
	store.runOnly = true
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: 50 * time.Millisecond})
	b.lanes.pipeAlways = true
	stuck := make(chan struct{})
	entered := make(chan struct{})
	var mu sync.Mutex
	var ran []string
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		ran = append(ran, img)
		mu.Unlock()
		if img == "v3" {
			close(entered)
			<-stuck // ignores ctx
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	runs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran)
	}
	stop := run(t, b)
	ctx := context.Background()
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	waitFor(t, "v2 held beside v1's write, a parked", func() bool { return len(runs()) == 2 && isParked(b, "a") })
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v3")))
	<-entered
	start := time.Now()
	must(t, stop())
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Run took %v to return", took)
	}
	store.frozen.Store(true)
	close(stuck)
	time.Sleep(50 * time.Millisecond) // the stuck pass ends, and would write
	if n := store.late.Load(); n != 0 {
		t.Errorf("%d Saves after Run returned: %v", n, store.lateLog)
	}
	store.frozen.Store(false)
	equal(t, []string{"v1", "v2", "v3"}, runs())

	runs2 := resume(t, store.MemoryStore, nil)
	equal(t, []string{"v3"}, runs2("a"), "after the restart: the abandoned v3 once, not v2 (held, saved with the pending state)")
	noRerun(t, store.MemoryStore, map[string]string{"a": "v3"})
}

// Shutdown while writes hang, and they return (succeeding) while Run
// waits for them: what the held passes owe is written, and the states
// never handled are pending for the restart, which runs nothing else.
func TestAttack22cShutdownWritesReturnDuringDrain(t *testing.T) {
	store := newAtkStore()
	names := []string{"a", "b", "c"}
	for _, n := range names {
		store.hold(n)
	}
	b := newBus(t, &Options{Store: store, Workers: 1, Writers: 1, ShutdownTimeout: 2 * time.Second})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	cancel, done := startRun(b)
	ctx := context.Background()
	observeParked(t, b, runs, names, "v1", "v2")
	cancel(nil)
	waitFor(t, "the bus stopping", func() bool { return b.isStopping() })
	// States observed now are refused or queued for the next run.
	for _, n := range names {
		if err := b.Observe(ctx, keyNamed(n), doc(n, "v3")); err != nil {
			t.Logf("Observe while stopping: %v", err)
		}
	}
	for _, n := range names {
		store.open(n)
	}
	must(t, waitRun(t, done, 5*time.Second))
	first := map[string][]string{}
	for _, n := range names {
		first[n] = runs(n)
		equal(t, []string{"v1", "v2"}, first[n], "handled before Run returned")
	}
	runs2 := resume(t, store.MemoryStore, nil)
	for _, n := range names {
		equal(t, []string{"v3"}, runs2(n), n+" after the restart")
	}
	noRerun(t, store.MemoryStore, map[string]string{"a": "v3", "b": "v3", "c": "v3"})
}

// atkSink is a sink that counts PutStatus calls after freeze, keeps each
// key name's messages in order, can be slow, and notes calls of one key
// that overlap.
type atkSink struct {
	delay    time.Duration
	mu       sync.Mutex
	msgs     map[string][]string
	inflight map[string]int
	overlaps []string
	frozen   atomic.Bool
	late     atomic.Int32
}

func newAtkSink() *atkSink {
	return &atkSink{msgs: map[string][]string{}, inflight: map[string]int{}}
}

func (s *atkSink) PutStatus(ctx context.Context, key Key, obj map[string]any, overall Status, slots Slots) error {
	if s.frozen.Load() {
		s.late.Add(1)
	}
	s.mu.Lock()
	s.inflight[key.Name]++
	if s.inflight[key.Name] > 1 {
		s.overlaps = append(s.overlaps, key.Name)
	}
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	s.inflight[key.Name]--
	s.msgs[key.Name] = append(s.msgs[key.Name], overall.Message)
	s.mu.Unlock()
	return nil
}

func (s *atkSink) of(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs[name])
}

// A halt while keys are parked on hanging writes, with passes holding
// their writes beside them and more states running: Run returns nil at
// once, and nothing is written after it did, not even the writes that
// the held passes owe once the hanging writes return.
func TestAttack22cHaltParked(t *testing.T) {
	store := newAtkStore()
	sink := newAtkSink()
	names := []string{"h0", "h1", "h2", "h3"}
	for _, n := range names {
		store.hold(n)
	}
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 1, Writers: 1, ShutdownTimeout: time.Hour})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	cancel, done := startRun(b)
	ctx := context.Background()
	observeParked(t, b, runs, names, "v1", "v2")
	for _, n := range names {
		must(t, b.Observe(ctx, keyNamed(n), doc(n, "v3")))
	}
	cancel(fmt.Errorf("lease lost: %w", ErrHalt))
	start := time.Now()
	must(t, waitRun(t, done, 3*time.Second))
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("Run returned %v after the halt", took)
	}
	store.frozen.Store(true)
	sink.frozen.Store(true)
	for _, n := range names {
		store.open(n)
	}
	time.Sleep(50 * time.Millisecond)
	if n := store.late.Load(); n != 0 {
		t.Errorf("the halted bus saved %d records after Run returned: %v", n, store.lateLog)
	}
	if n := sink.late.Load(); n != 0 {
		t.Errorf("the halted bus published %d statuses after Run returned", n)
	}
	if err := b.Observe(ctx, keyNamed("h0"), doc("h0", "v4")); !errors.Is(err, ErrClosed) {
		t.Errorf("Observe after a halt = %v, want ErrClosed", err)
	}
	for _, n := range names {
		data, err := store.MemoryStore.Load(ctx, keyNamed(n))
		must(t, err)
		if data != nil {
			t.Errorf("%s: a record reached the store though every write hung until the halt: %s", n, data)
		}
	}
}

// A store that fails every Save for a while, with states arriving while
// the key is parked on a failing write: no handler runs twice for a
// value, the retries keep to the backoff (no hot loop of Saves), and once
// the store is back the record lands and the status is the latest.
func TestAttack22cSaveFailsWhileParked(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	store.setFail("a", -1)
	sink := newAtkSink()
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 1,
		Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond}})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	for _, img := range []string{"v2", "v3"} {
		must(t, b.Observe(ctx, keyNamed("a"), doc("a", img)))
		waitFor(t, img+" beside the failing write", func() bool { return slices.Contains(runs("a"), img) && isParked(b, "a") })
	}
	store.open("a") // the Saves return now, failing
	time.Sleep(200 * time.Millisecond)
	failing := store.savesOf("a")
	// 200 ms of backoff from 10 ms doubling to 40 ms: about 7 retries, each
	// at most two Saves (the failed one's and the held pass's).
	if failing > 30 {
		t.Errorf("%d Saves in 200 ms of a failing store: the retries do not keep to the backoff", failing)
	}
	if failing < 2 {
		t.Errorf("%d Saves in 200 ms of a failing store: no retry", failing)
	}
	store.setFail("a", 0)
	settle(t, b)
	equal(t, []string{"v1", "v2", "v3"}, runs("a"), "handlers after the store came back")
	st, _, err := b.Status(ctx, keyNamed("a"))
	must(t, err)
	equal(t, "v3", st.Message)
	if m := sink.of("a"); len(m) == 0 || m[len(m)-1] != "v3" {
		t.Errorf("the sink's last status of a is not v3: %v", m)
	}
	settled := store.savesOf("a")
	time.Sleep(100 * time.Millisecond)
	equal(t, settled, store.savesOf("a"), "Saves after Settle returned")
	must(t, stop())
	noRerun(t, store.MemoryStore, map[string]string{"a": "v3"})
}

// The write a held pass owes fails when the write goroutine makes it (no
// lane holds the key): the record is written by a retry, the key stays
// busy meanwhile for Settle, and no handler runs again.
func TestAttack22cOwedWriteFails(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 1, Backoff: Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	waitFor(t, "v2 held beside v1's write, a parked", func() bool { return len(runs("a")) == 2 && isParked(b, "a") })
	store.let("a", 1) // v1's write lands
	store.waitStarted(t, "a")
	// The write of v2 is under way on the write goroutine: Settle waits.
	store.setFail("a", 1)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := b.Settle(short); err == nil {
		t.Errorf("Settle returned while the write v2 owes was under way")
	}
	store.open("a") // fails once, then the retry lands
	settle(t, b)
	equal(t, []string{"v1", "v2"}, runs("a"))
	if n := store.savesOf("a"); n < 3 {
		t.Errorf("%d Saves: want v1's, v2's failed one, and its retry", n)
	}
	must(t, stop())
	noRerun(t, store.MemoryStore, map[string]string{"a": "v2"})
}

// A Dispatch call for a key parked on a hanging write waits for that
// write: it returns only once the write has returned, with its state
// handled after the states before it; Wait and Settle do not return
// while the write hangs.
func TestAttack22cDispatchBesideParked(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 1})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	waitFor(t, "v2 held beside v1's write, a parked", func() bool { return len(runs("a")) == 2 && isParked(b, "a") })
	dispatched := make(chan error, 1)
	go func() { dispatched <- b.Dispatch(ctx, keyNamed("a"), doc("a", "v3")) }()
	waitFor(t, "the Dispatch call waiting", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.awaited(b.q.keys[keyNamed("a")])
	})
	for _, wait := range []func(context.Context) error{b.Wait, b.Settle} {
		short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		if err := wait(short); err == nil {
			t.Errorf("Wait or Settle returned while a's write hung")
		}
		cancel()
	}
	select {
	case err := <-dispatched:
		t.Fatalf("Dispatch returned (%v) while the key's write hung", err)
	case <-time.After(30 * time.Millisecond):
	}
	store.open("a")
	select {
	case err := <-dispatched:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Dispatch did not return once the write returned")
	}
	settle(t, b)
	equal(t, []string{"v1", "v2", "v3"}, runs("a"))
	st, _, err := b.Status(ctx, keyNamed("a"))
	must(t, err)
	equal(t, "v3", st.Message)
	must(t, stop())
	noRerun(t, store.MemoryStore, map[string]string{"a": "v3"})
}

// A deletion and a re-creation of a key parked on a hanging write, with a
// pass holding its write beside it: the deletion's handler runs once, the
// re-created object's handler runs as a Create, the store ends with the
// new incarnation's record, and nothing of the old one is written after
// its deletion.
func TestAttack22cDeleteRecreateWhileParked(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 2})
	b.lanes.pipeAlways = true
	var mu sync.Mutex
	var log []string
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.Object(), "spec.image")
		mu.Lock()
		log = append(log, ev.Type.String()+" "+img)
		mu.Unlock()
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}, Types: []EventType{Create, Update, Delete}}))
	logged := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(log)
	}
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	waitFor(t, "v2 held beside v1's write", func() bool { return len(logged()) == 2 && isParked(b, "a") })
	must(t, b.ObserveDelete(ctx, keyNamed("a"), doc("a", "v2")))
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "n1")))
	waitFor(t, "the delete handler", func() bool { return len(logged()) == 3 })
	store.open("a")
	settle(t, b)
	equal(t, []string{"create v1", "update v2", "delete v2", "create n1"}, logged())
	st, slots, err := b.Status(ctx, keyNamed("a"))
	must(t, err)
	equal(t, "n1", st.Message)
	equal(t, 1, len(slots))
	must(t, stop())

	b2 := newBus(t, &Options{Store: store.MemoryStore})
	runs2 := imageRuns(t, b2)
	must(t, b2.Dispatch(ctx, keyNamed("a"), doc("a", "n1")))
	equal(t, []string(nil), runs2("a"), "the new incarnation's record is not the one stored")
}

// With Options.Incarnation, a state of another incarnation arriving while
// the key is parked on a hanging write deletes the live incarnation first
// and starts the new one, whose record is the one stored; no handler of
// the old incarnation runs again.
func TestAttack22cIncarnationChangeWhileParked(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	opts := func() *Options {
		return &Options{Store: store, Workers: 2, Incarnation: uidOf}
	}
	b := newBus(t, opts())
	b.lanes.pipeAlways = true
	var mu sync.Mutex
	var log []string
	h := func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.Object(), "spec.image")
		mu.Lock()
		log = append(log, ev.Type.String()+" "+uidOf(ev.Object())+" "+img)
		mu.Unlock()
		return Active(img), nil
	}
	on := On{Fields: []string{"spec.image"}, Types: []EventType{Create, Update, Delete}}
	must(t, b.Handle("image", h, on))
	logged := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(log)
	}
	obj := func(uid, img string) map[string]any {
		return withUID(uid, map[string]any{"spec": map[string]any{"image": img}})
	}
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), obj("u1", "v1")))
	store.waitStarted(t, "a")
	must(t, b.Observe(ctx, keyNamed("a"), obj("u1", "v2")))
	waitFor(t, "v2 held beside v1's write", func() bool { return len(logged()) == 2 && isParked(b, "a") })
	must(t, b.Observe(ctx, keyNamed("a"), obj("u2", "w1")))
	waitFor(t, "u1's deletion", func() bool { return len(logged()) >= 3 })
	store.open("a")
	settle(t, b)
	equal(t, []string{"create u1 v1", "update u1 v2", "delete u1 v2", "create u2 w1"}, logged())
	must(t, stop())

	mu.Lock()
	log = nil
	mu.Unlock()
	b2 := newBus(t, opts())
	must(t, b2.Handle("image", h, on))
	must(t, b2.Dispatch(ctx, keyNamed("a"), obj("u2", "w1")))
	equal(t, []string(nil), logged(), "u2's record is not the one stored")
}

// A slow sink beside slow writes: each key's statuses reach the sink in
// the order of its states, never two at once, and end with the latest;
// Bus.Status agrees.
func TestAttack22cSlowSinkInOrder(t *testing.T) {
	for _, always := range []bool{true, false} {
		t.Run(fmt.Sprint("pipeAlways ", always), func(t *testing.T) {
			store := newAtkStore()
			store.lag = 300 * time.Microsecond // over pipeAfter: writes go beside on their own
			sink := newAtkSink()
			sink.delay = time.Millisecond
			b := newBus(t, &Options{Store: store, Sink: sink, Workers: 2, Writers: 1})
			b.lanes.pipeAlways = always
			runs := imageRuns(t, b)
			stop := run(t, b)
			ctx := context.Background()
			names := []string{"s0", "s1", "s2", "s3"}
			const n = 40
			var feed sync.WaitGroup
			for _, name := range names {
				feed.Go(func() {
					for i := 1; i <= n; i++ {
						must(t, b.Observe(ctx, keyNamed(name), doc(name, fmt.Sprintf("v%03d", i))))
						if i%5 == 0 {
							time.Sleep(time.Millisecond)
						}
					}
				})
			}
			feed.Wait()
			settle(t, b)
			latest := map[string]string{}
			for _, name := range names {
				want := fmt.Sprintf("v%03d", n)
				latest[name] = want
				msgs := sink.of(name)
				if !slices.IsSorted(msgs) {
					t.Errorf("%s: statuses out of order: %v", name, msgs)
				}
				if len(msgs) == 0 || msgs[len(msgs)-1] != want {
					t.Errorf("%s: the sink's last status is not %s: %v", name, want, msgs)
				}
				st, _, err := b.Status(ctx, keyNamed(name))
				must(t, err)
				equal(t, want, st.Message, name+"'s status")
				if r := runs(name); !slices.IsSorted(r) || len(slices.Compact(slices.Clone(r))) != len(r) {
					t.Errorf("%s: handler runs out of order or repeated: %v", name, r)
				}
			}
			sink.mu.Lock()
			if len(sink.overlaps) > 0 {
				t.Errorf("PutStatus calls of one key overlapped: %v", sink.overlaps)
			}
			sink.mu.Unlock()
			if always {
				if b.Stats().Beside == 0 {
					t.Errorf("no pass ran beside a write")
				}
			}
			must(t, stop())
			noRerun(t, store.MemoryStore, latest)
		})
	}
}

// Many keys, one worker and one write slot, slow writes and a slow sink,
// states observed from several goroutines at once: no two passes of a key
// at once, each key's handlers in the order of its states, every key ends
// handled at its latest state with its record durable.
func TestAttack22cManyKeysOneWorkerOneWriter(t *testing.T) {
	for _, c := range []struct {
		name   string
		always bool
		setup  func(s *atkStore)
	}{
		{"slow store", true, func(s *atkStore) { s.lag = 200 * time.Microsecond }},
		// Every 5th Save fails: retries beside passes and parked keys.
		{"flaky store", true, func(s *atkStore) { s.lag, s.failNth = 200*time.Microsecond, 5 }},
		// One Save in 8 takes 1 ms: the average crosses pipeAfter both
		// ways, so passes switch between writing beside and in place.
		{"cost around pipeAfter", false, func(s *atkStore) { s.lag, s.lagNth = time.Millisecond, 8 }},
		{"cost around pipeAfter, flaky", false, func(s *atkStore) { s.lag, s.lagNth, s.failNth = time.Millisecond, 8, 7 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := newAtkStore()
			c.setup(store)
			manyKeys(t, store, c.always)
		})
	}
}

func manyKeys(t *testing.T, store *atkStore, always bool) {
	sink := newAtkSink()
	sink.delay = 100 * time.Microsecond
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 1, Writers: 1, MaxBacklog: 1000,
		Backoff: Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	b.lanes.pipeAlways = always
	var mu sync.Mutex
	ran := map[string][]string{}
	in := map[string]int{}
	var overlap atomic.Int32
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		in[ev.Key.Name]++
		if in[ev.Key.Name] > 1 {
			overlap.Add(1)
		}
		ran[ev.Key.Name] = append(ran[ev.Key.Name], img)
		mu.Unlock()
		time.Sleep(50 * time.Microsecond)
		mu.Lock()
		in[ev.Key.Name]--
		mu.Unlock()
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	stop := run(t, b)
	ctx := context.Background()
	const feeders, keys, states = 4, 6, 25
	latest := map[string]string{}
	var feed sync.WaitGroup
	for f := range feeders {
		for k := range keys {
			latest[fmt.Sprintf("f%d-k%d", f, k)] = fmt.Sprintf("v%03d", states)
		}
		feed.Go(func() {
			for i := 1; i <= states; i++ {
				for k := range keys {
					name := fmt.Sprintf("f%d-k%d", f, k)
					must(t, b.Observe(ctx, keyNamed(name), doc(name, fmt.Sprintf("v%03d", i))))
				}
				if i%4 == 0 {
					time.Sleep(200 * time.Microsecond)
				}
			}
		})
	}
	feed.Wait()
	settle(t, b)
	if n := overlap.Load(); n > 0 {
		t.Errorf("%d times two passes of one key ran at once", n)
	}
	mu.Lock()
	for name, want := range latest {
		r := ran[name]
		var all []string
		for i := 1; i <= states; i++ {
			all = append(all, fmt.Sprintf("v%03d", i))
		}
		if !slices.Equal(r, all) {
			t.Errorf("%s: ran %v, want each of its %d states once, in order", name, r, states)
		}
		st, _, err := b.Status(ctx, keyNamed(name))
		must(t, err)
		if st.Message != want {
			t.Errorf("%s: status %q, want %q", name, st.Message, want)
		}
		if m := sink.of(name); len(m) == 0 || m[len(m)-1] != want || !slices.IsSorted(m) {
			t.Errorf("%s: sink statuses %v, want in order ending with %s", name, m, want)
		}
	}
	mu.Unlock()
	sink.mu.Lock()
	if len(sink.overlaps) > 0 {
		t.Errorf("PutStatus calls of one key overlapped: %v", sink.overlaps)
	}
	sink.mu.Unlock()
	t.Logf("stats: %+v", b.Stats())
	must(t, stop())
	noRerun(t, store.MemoryStore, latest)
}

// A handler that fails on a key parked on its hanging write is retried
// beside that write: the retry runs while the write hangs, the value is
// handled once (one failure, one success), and the record that lands
// holds it.
func TestAttack22cRetryBesideParked(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 1, Backoff: Backoff{Initial: 5 * time.Millisecond, Max: 5 * time.Millisecond}})
	b.lanes.pipeAlways = true
	var mu sync.Mutex
	var log []string
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		defer mu.Unlock()
		log = append(log, fmt.Sprint(img, "#", ev.Attempt))
		if img == "v2" && ev.Attempt == 1 {
			return Status{}, errors.New("not yet")
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	logged := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(log)
	}
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	if !eventually(2*time.Second, func() bool { return len(logged()) == 3 }) {
		t.Errorf("the retry of v2 did not run beside v1's hanging write: %v", logged())
	}
	equal(t, 1, store.savesOf("a"), "writes begun while v1's hangs")
	store.open("a")
	settle(t, b)
	equal(t, []string{"v1#1", "v2#1", "v2#2"}, logged())
	st, _, err := b.Status(ctx, keyNamed("a"))
	must(t, err)
	equal(t, "v2", st.Message)
	must(t, stop())
	noRerun(t, store.MemoryStore, map[string]string{"a": "v2"})
}

// Shutdown while a Dispatch call waits for a key parked on a hanging
// write: the call returns ErrClosed (its state, queued when it was called,
// is saved as pending), Run returns, and the parked key's held pass and
// the Dispatch's state are handled once across the restart.
func TestAttack22cShutdownWithDispatchWaiting(t *testing.T) {
	store := newAtkStore()
	store.runOnly = true
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: 50 * time.Millisecond})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	waitFor(t, "v2 held beside v1's write, a parked", func() bool { return len(runs("a")) == 2 && isParked(b, "a") })
	dispatched := make(chan error, 1)
	go func() { dispatched <- b.Dispatch(ctx, keyNamed("a"), doc("a", "d")) }()
	waitFor(t, "the Dispatch call waiting", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.awaited(b.q.keys[keyNamed("a")])
	})
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	var derr error
	select {
	case derr = <-dispatched:
	case <-time.After(5 * time.Second):
		t.Fatal("Dispatch did not return at shutdown")
	}
	select {
	case err := <-stopped:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	handled := slices.Contains(runs("a"), "d")
	if derr == nil && !handled {
		t.Errorf("Dispatch returned nil but its state was not handled: %v", runs("a"))
	}
	if derr != nil && !errors.Is(derr, ErrClosed) {
		t.Errorf("Dispatch at shutdown = %v, want ErrClosed", derr)
	}
	runs2 := resume(t, store.MemoryStore, nil)
	for _, img := range runs2("a") {
		if slices.Contains(runs("a"), img) {
			t.Errorf("%s ran again after the restart: first %v, then %v", img, runs("a"), runs2("a"))
		}
	}
	if !handled && !slices.Contains(runs2("a"), "d") {
		t.Errorf("Dispatch's state, saved as pending, was not handled after the restart: %v", runs2("a"))
	}
	noRerun(t, store.MemoryStore, map[string]string{"a": "d"})
}

// atkPaired is an atkStore that writes a record and its status in one
// write for its own sink (a StatusStore, rule 22b), through the same
// gates and failures as its Saves.
type atkPaired struct {
	*atkStore
	sink     *atkSink
	together atomic.Int32
}

func (p *atkPaired) SaveStatus(ctx context.Context, sink StatusSink, key Key, data []byte, obj map[string]any, overall Status, slots Slots) (bool, error) {
	if sink != StatusSink(p.sink) {
		return false, nil
	}
	p.together.Add(1)
	if err := p.atkStore.Save(ctx, key, data); err != nil {
		return true, err // the record was not written; neither is the status
	}
	return true, p.sink.PutStatus(ctx, key, obj, overall, slots)
}

// A StatusStore beside the next pass: the combined write of v1 hangs, then
// fails; the passes beside it hold their write; the retry carries the
// latest record and status together, and no handler runs again.
func TestAttack22cStatusStoreBeside(t *testing.T) {
	sink := newAtkSink()
	store := &atkPaired{atkStore: newAtkStore(), sink: sink}
	store.hold("a")
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 1, Backoff: Backoff{Initial: 2 * time.Millisecond, Max: 5 * time.Millisecond}})
	b.lanes.pipeAlways = true
	runs := imageRuns(t, b)
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	for _, img := range []string{"v2", "v3"} {
		must(t, b.Observe(ctx, keyNamed("a"), doc("a", img)))
		waitFor(t, img+" beside v1's write", func() bool { return slices.Contains(runs("a"), img) && isParked(b, "a") })
	}
	store.setFail("a", 1)
	store.open("a")
	settle(t, b)
	equal(t, []string{"v1", "v2", "v3"}, runs("a"))
	st, _, err := b.Status(ctx, keyNamed("a"))
	must(t, err)
	equal(t, "v3", st.Message)
	if m := sink.of("a"); len(m) == 0 || m[len(m)-1] != "v3" {
		t.Errorf("the sink's statuses of a: %v, want ending with v3", m)
	}
	if store.together.Load() < 2 {
		t.Errorf("%d combined writes: want the failed one and its retry", store.together.Load())
	}
	must(t, stop())
	noRerun(t, store.MemoryStore, map[string]string{"a": "v3"})
}

// A handler of one key dispatches another key synchronously, while both
// keys' writes run beside their next passes, with one worker and one
// write slot: no deadlock, every Dispatch succeeds, and both keys end
// durable at their latest states.
func TestAttack22cDispatchFromHandler(t *testing.T) {
	store := newAtkStore()
	store.lag = 300 * time.Microsecond
	sink := newAtkSink()
	b := newBus(t, &Options{Store: store, Sink: sink, Workers: 1, Writers: 1})
	b.lanes.pipeAlways = true
	var mu sync.Mutex
	var derr []error
	ran := map[string][]string{}
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		ran[ev.Key.Name] = append(ran[ev.Key.Name], img)
		mu.Unlock()
		if ev.Key.Name == "a" {
			err := b.Dispatch(ctx, keyNamed("b"), doc("b", "from-"+img))
			mu.Lock()
			derr = append(derr, err)
			mu.Unlock()
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	cancel, done := startRun(b)
	ctx := context.Background()
	for v := 1; v <= 10; v++ {
		must(t, b.Observe(ctx, keyNamed("a"), doc("a", fmt.Sprintf("v%02d", v))))
		must(t, b.Observe(ctx, keyNamed("b"), doc("b", fmt.Sprintf("obs-v%02d", v))))
	}
	settle(t, b)
	cancel(nil)
	must(t, waitRun(t, done, 5*time.Second))
	mu.Lock()
	defer mu.Unlock()
	for _, err := range derr {
		if err != nil {
			t.Errorf("Dispatch from a handler: %v", err)
		}
	}
	var want []string
	for v := 1; v <= 10; v++ {
		want = append(want, fmt.Sprintf("v%02d", v))
	}
	equal(t, want, ran["a"])
	lastB := ran["b"][len(ran["b"])-1]
	st, _, err := b.Status(ctx, keyNamed("b"))
	must(t, err)
	equal(t, lastB, st.Message, "b's status is of the last state it handled")
	if m := sink.of("b"); len(m) == 0 || m[len(m)-1] != lastB {
		t.Errorf("b's sink statuses %v, want ending with %s", m, lastB)
	}
	noRerun(t, store.MemoryStore, map[string]string{"a": "v10", "b": lastB})
}

// A retry falls due while a lane runs a pass beside the key's hanging
// write, and a new state arrives then too: once the pass ends, the key
// has a due retry and a queued state, and they must run at once beside
// the write (rule 22c: a state that arrives meanwhile runs its handlers
// at once), not wait for the write to return. (park asks runnable, which
// is false while a retry is due, and parks the key without putting it on
// the ready list: nothing takes it over until the write returns.)
func TestAttack22cStateAfterDueRetryRunsBeside(t *testing.T) {
	store := newAtkStore()
	store.hold("a")
	b := newBus(t, &Options{Store: store, Workers: 2})
	b.lanes.pipeAlways = true
	inV2, goV2 := make(chan struct{}), make(chan struct{})
	inV3 := make(chan struct{})
	var mu sync.Mutex
	var log []string
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		mu.Lock()
		log = append(log, img)
		mu.Unlock()
		switch img {
		case "v2":
			close(inV2)
			<-goV2
			return Status{}, RetryAfter(time.Millisecond, errors.New("v2 fails"))
		case "v3":
			close(inV3)
			time.Sleep(40 * time.Millisecond) // v2's retry falls due meanwhile
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	logged := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(log)
	}
	stop := run(t, b)
	ctx := context.Background()

	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
	store.waitStarted(t, "a")
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
	<-inV2
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v3")))
	close(goV2)
	<-inV3
	time.Sleep(10 * time.Millisecond)
	must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v4")))
	if !eventually(time.Second, func() bool { return slices.Contains(logged(), "v4") }) {
		t.Errorf("v4 did not run within 1 s beside the hanging write (ran %v; a parked: %v): it waits for the write\n%s", logged(), isParked(b, "a"), stacksWith("(*Bus).join"))
	}
	store.open("a")
	settle(t, b)
	equal(t, []string{"v1", "v2", "v3", "v4"}, logged())
	must(t, stop())
	noRerun(t, store.MemoryStore, map[string]string{"a": "v4"})
}

// stubbornStore is a MemoryStore whose first Save of each key takes a
// while whatever its context, then succeeds; later Saves end with their
// context. It counts the Saves made after freeze.
type stubbornStore struct {
	*MemoryStore
	took   time.Duration
	mu     sync.Mutex
	seen   map[string]bool
	frozen atomic.Bool
	late   atomic.Int32
}

func (s *stubbornStore) Save(ctx context.Context, key Key, data []byte) error {
	if s.frozen.Load() {
		s.late.Add(1)
	}
	s.mu.Lock()
	first := !s.seen[key.Name]
	s.seen[key.Name] = true
	s.mu.Unlock()
	if first {
		time.Sleep(s.took) // ignores ctx
	} else if err := ctx.Err(); err != nil {
		return err
	}
	return s.MemoryStore.Save(ctx, key, data)
}

// Shutdown, or a halt, while a key's write ignores its cancelled context
// for longer than ShutdownTimeout and the second Run waits for handlers
// (1.15 s > 50 ms + 1 s): a pass beside it holds its write. Run returns;
// nothing is written after it did; after a shutdown the held pass is
// saved (with its state pending) and not run again; after a halt, nothing
// of it is written. (Real time: under synctest, shutdown's wait for the
// key's stripe lock is not a durable block, and the bubble deadlocks.)
func TestAttack22cStubbornWriteAtStop(t *testing.T) {
	for _, halt := range []bool{false, true} {
		t.Run(fmt.Sprint("halt ", halt), func(t *testing.T) {
			mem := NewMemoryStore()
			store := &stubbornStore{MemoryStore: mem, took: 1150 * time.Millisecond, seen: map[string]bool{}}
			b := newBus(t, &Options{Store: store, Workers: 1, ShutdownTimeout: 50 * time.Millisecond})
			b.lanes.pipeAlways = true
			runs := imageRuns(t, b)
			cancel, done := startRun(b)
			ctx := context.Background()
			must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v1")))
			waitFor(t, "v1's write under way", func() bool { return isParked(b, "a") })
			must(t, b.Observe(ctx, keyNamed("a"), doc("a", "v2")))
			waitFor(t, "v2 held beside v1's write, a parked", func() bool { return len(runs("a")) == 2 && isParked(b, "a") })
			start := time.Now()
			if halt {
				cancel(fmt.Errorf("lease lost: %w", ErrHalt))
			} else {
				cancel(nil)
			}
			must(t, waitRun(t, done, 4*time.Second))
			t.Logf("Run returned after %v", time.Since(start))
			store.frozen.Store(true)
			time.Sleep(50 * time.Millisecond)
			if n := store.late.Load(); n != 0 {
				t.Errorf("%d Saves after Run returned", n)
			}
			first := runs("a")
			if halt {
				// v1's write was under way at the halt and may land; v2's
				// record must not.
				b2 := newBus(t, &Options{Store: mem})
				runs2 := imageRuns(t, b2)
				must(t, b2.Dispatch(ctx, keyNamed("a"), doc("a", "v2")))
				equal(t, []string{"v2"}, runs2("a"), "after the halt, v2's record is not in the store")
				return
			}
			runs2 := resume(t, mem, nil)
			for _, img := range runs2("a") {
				if slices.Contains(first, img) {
					t.Errorf("%s ran again after the restart (first %v, then %v)", img, first, runs2("a"))
				}
			}
			noRerun(t, mem, map[string]string{"a": "v2"})
		})
	}
}

// observeParked observes each of imgs as the state of every key of names,
// one image after the other, and waits until each key's handler ran for
// it and the key is parked on its write.
func observeParked(t *testing.T, b *Bus, runs func(string) []string, names []string, imgs ...string) {
	t.Helper()
	for _, img := range imgs {
		for _, n := range names {
			must(t, b.Observe(context.Background(), keyNamed(n), doc(n, img)))
		}
		waitFor(t, "every key's "+img, func() bool {
			for _, n := range names {
				if !slices.Contains(runs(n), img) || !isParked(b, n) {
					return false
				}
			}
			return true
		})
	}
}
