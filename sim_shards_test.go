package opbus

// TestSimulationShards: two or three buses share one store (the
// simulation's faultStore: slow writes, failing loads and saves) and hand
// keys to each other by the hand-off rule, Release on the owner and then
// Acquire on the next, at random points of seeded random sequences,
// inside testing/synctest: while a key's pass runs, while its write is
// under way, with a Release deadline that abandons the pass. Every
// handler call checks, against the harness's model of who owns what:
//
//   - no key has passes on two buses at once, nor on a bus that released
//     it (the owner is the bus that last acquired it);
//   - no value is handled twice, unless a store fault or an abandoned
//     pass of the key since its first success excuses a second run (its
//     commit may not have been written);
//
// and at quiescence, with the store's faults off, each key's last value
// is handled: its owner shows the status of that value. No key is
// observed again after a hand-off: what the next owner handles comes
// from the record the store carries.
//
//	go test -run '^TestSimulationShards$' .
//	OPBUS_SIM_SEED=123 go test -run '^TestSimulationShards$' -v .
//	OPBUS_SIM_DURATION=10m go test -run '^TestSimulationShards$' -timeout 0 .

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// shardStats counts, across sequences, the hand-offs made, those made
// while a pass of the key ran, and those whose Release deadline ended
// first (a pass abandoned), to show that the sequences reach them.
var shardStats struct{ handoffs, midPass, abandoned atomic.Int64 }

type shardOp struct {
	kind  string // observe, handoff, fault, sleep
	key   int
	to    int           // handoff: the bus that acquires
	short bool          // handoff: Release's deadline may abandon a pass
	d     time.Duration // sleep; handoff: the short deadline
}

func (o shardOp) String() string {
	switch o.kind {
	case "handoff":
		if o.short {
			return fmt.Sprintf("handoff(k%d→bus%d, deadline %v)", o.key, o.to, o.d)
		}
		return fmt.Sprintf("handoff(k%d→bus%d)", o.key, o.to)
	case "sleep":
		return fmt.Sprintf("sleep(%v)", o.d)
	}
	return fmt.Sprintf("%s(k%d)", o.kind, o.key)
}

type shardConfig struct {
	seed    uint64
	buses   int
	keys    int
	workers int
	slow    bool
}

func genShards(seed uint64) (shardConfig, []shardOp) {
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	cfg := shardConfig{seed: seed, buses: 2 + r.IntN(2), keys: 2 + r.IntN(4), workers: 1 + r.IntN(2), slow: r.IntN(2) == 0}
	var ops []shardOp
	for range 40 {
		k := r.IntN(cfg.keys)
		switch n := r.IntN(20); {
		case n < 9:
			ops = append(ops, shardOp{kind: "observe", key: k})
		case n < 14:
			ops = append(ops, shardOp{kind: "handoff", key: k, to: r.IntN(cfg.buses), short: r.IntN(3) == 0,
				d: time.Duration(r.IntN(60)) * time.Millisecond})
		case n < 16:
			ops = append(ops, shardOp{kind: "fault", key: k})
		default:
			ops = append(ops, shardOp{kind: "sleep", d: time.Duration(r.IntN(40)) * time.Millisecond})
		}
	}
	return cfg, ops
}

// shardRunState is one run of one sequence.
type shardRunState struct {
	cfg   shardConfig
	store *faultStore
	buses []*Bus
	stops []func() error

	mu         sync.Mutex
	owner      []int // per key: the bus that owns it; -1 while handed off
	running    []int // per key: handler calls under way, on any bus
	last       []string
	seq        int
	attempts   map[string]int // key/value → calls
	succeeded  map[string]int // key/value → the key's excuses at its first success
	excuse     []int          // per key: store faults and abandoned passes
	violations []string
}

func (s *shardRunState) violate(format string, args ...any) {
	if len(s.violations) < 10 {
		s.violations = append(s.violations, fmt.Sprintf("t=%v: ", time.Now().UTC().Format("15:04:05.000"))+fmt.Sprintf(format, args...))
	}
}

func (s *shardRunState) key(k int) Key {
	return Key{Kind: "Pod", Namespace: "shard", Name: "k" + strconv.Itoa(k)}
}

func (s *shardRunState) index(key Key) int {
	k, _ := strconv.Atoi(strings.TrimPrefix(key.Name, "k"))
	return k
}

// handler is bus i's handler: it checks ownership and overlap, and
// behaves by its key, value and attempt: it fails or blocks (until its
// context ends) on a first or second attempt at some values.
func (s *shardRunState) handler(i int) HandlerFunc {
	return func(ctx context.Context, ev *Event) (Status, error) {
		k := s.index(ev.Key)
		v, _ := ev.New["x"].(string)
		id := ev.Key.Name + "/" + v
		s.mu.Lock()
		if s.running[k] > 0 {
			s.violate("overlap: bus%d runs %s while another pass of it runs", i, id)
		}
		if s.owner[k] != i {
			s.violate("owner: bus%d runs %s, owned by bus%d", i, id, s.owner[k])
		}
		s.running[k]++
		attempt := s.attempts[id]
		s.attempts[id]++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.running[k]--
			s.mu.Unlock()
		}()
		h := mix(strconv.FormatUint(s.cfg.seed, 10), id, strconv.Itoa(attempt)) % 10
		if attempt < 2 {
			switch {
			case h < 2:
				return Status{}, errors.New("simulated failure")
			case h < 4:
				select { // a slow handler: a hand-off may come mid-pass
				case <-time.After(time.Duration(20+h*10) * time.Millisecond):
				case <-ctx.Done():
					return Status{}, context.Cause(ctx)
				}
			case h < 5:
				select { // a handler stuck for seconds, unless its context ends
				case <-time.After(5 * time.Second):
				case <-ctx.Done():
					return Status{}, context.Cause(ctx)
				}
			}
		}
		s.mu.Lock()
		if ex, ok := s.succeeded[id]; ok && ex == s.excuse[k] {
			s.violate("twice: bus%d handled %s again (attempt %d), with no fault or abandoned pass of the key since", i, id, attempt)
		}
		s.succeeded[id] = s.excuse[k]
		s.mu.Unlock()
		return Active("x=" + v), nil
	}
}

func runShards(t *testing.T, cfg shardConfig, ops []shardOp) []string {
	var violations []string
	synctest.Test(t, func(t *testing.T) {
		s := &shardRunState{
			cfg: cfg, owner: make([]int, cfg.keys), running: make([]int, cfg.keys), last: make([]string, cfg.keys),
			attempts: map[string]int{}, succeeded: map[string]int{}, excuse: make([]int, cfg.keys),
		}
		s.store = &faultStore{inner: NewMemoryStore(), slow: cfg.slow}
		s.store.onFault = func(name string) {
			s.mu.Lock()
			s.excuse[s.index(Key{Name: name})]++
			s.mu.Unlock()
		}
		for k := range cfg.keys {
			s.owner[k] = k % cfg.buses
		}
		ctx := context.Background()
		for i := range cfg.buses {
			b, err := New(&Options{
				Store: s.store, Workers: cfg.workers, ShutdownTimeout: simShutdownTimeout,
				Backoff: Backoff{Initial: simBackoffInitial, Max: simBackoffMax, Factor: 2},
			})
			must(t, err)
			must(t, b.Handle("h", s.handler(i), On{Fields: []string{"x"}}))
			// A replica's share at start: the keys of the others are
			// released before anything is observed.
			must(t, b.Release(ctx, func(key Key) bool { return s.index(key)%cfg.buses != i }))
			s.buses = append(s.buses, b)
			s.stops = append(s.stops, run(t, b))
		}
		for _, o := range ops {
			s.apply(ctx, o)
		}
		s.store.setQuiet(true)
		time.Sleep(time.Minute) // retries and stuck handlers settle
		synctest.Wait()
		s.relistFailed(ctx)
		time.Sleep(time.Minute)
		synctest.Wait()
		s.check(ctx)
		for _, stop := range s.stops {
			if err := stop(); err != nil {
				s.violate("Run: %v", err)
			}
		}
		violations = s.violations
	})
	return violations
}

func (s *shardRunState) apply(ctx context.Context, o shardOp) {
	switch o.kind {
	case "observe":
		s.mu.Lock()
		s.seq++
		v := strconv.Itoa(s.seq)
		s.last[o.key] = v
		b := s.buses[s.owner[o.key]]
		s.mu.Unlock()
		if err := b.Observe(ctx, s.key(o.key), map[string]any{"x": v}); err != nil {
			s.violate("observe k%d on its owner: %v", o.key, err)
		}
	case "fault":
		what := "save"
		if o.key%2 == 1 {
			what = "load"
		}
		s.store.arm(s.key(o.key).Name, what, 1)
	case "sleep":
		time.Sleep(o.d)
	case "handoff":
		s.mu.Lock()
		from, busy := s.owner[o.key], s.running[o.key] > 0
		s.mu.Unlock()
		if from == o.to {
			return
		}
		shardStats.handoffs.Add(1)
		if busy {
			shardStats.midPass.Add(1)
		}
		keys := func(key Key) bool { return key == s.key(o.key) }
		rctx, cancel := context.WithTimeout(ctx, time.Hour)
		if o.short {
			cancel()
			rctx, cancel = context.WithTimeout(ctx, o.d)
		}
		err := s.buses[from].Release(rctx, keys)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			shardStats.abandoned.Add(1)
		}
		for try := 0; err != nil && try < 100; try++ {
			// Abandoned, or its pending states not saved: the key is not
			// handed on until its owner has let go of it, which it does
			// once the store's faults (finitely many) are spent.
			s.mu.Lock()
			s.excuse[o.key]++
			s.mu.Unlock()
			err = s.buses[from].Release(ctx, keys)
		}
		if err != nil {
			s.violate("release of k%d by bus%d: %v", o.key, from, err)
			return
		}
		s.mu.Lock()
		s.owner[o.key] = -1
		s.mu.Unlock()
		time.Sleep(time.Millisecond) // nobody owns it for a while
		s.mu.Lock()
		s.owner[o.key] = o.to
		s.mu.Unlock()
		for try := 0; ; try++ {
			err := s.buses[o.to].Acquire(ctx, keys)
			if err == nil {
				break
			}
			if try == 5 {
				s.violate("acquire of k%d by bus%d: %v", o.key, o.to, err)
				break
			}
		}
	}
}

// relistFailed observes again, on its owner, the last value of each key
// whose owner shows a failure of it: a failure taken on with a key's
// record (Acquire, like Run's start, reads records with pending states,
// not every record) is retried when the key is observed again, as a
// Kubernetes replica observes the objects of the buckets it takes on when
// it lists them. A key whose owner shows anything else is not helped:
// check reports it as lost.
func (s *shardRunState) relistFailed(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.cfg.keys {
		if s.last[k] == "" || s.owner[k] < 0 {
			continue
		}
		b := s.buses[s.owner[k]]
		st, _, err := b.Status(ctx, s.key(k))
		if err != nil || st.Level != LevelError || st.Message == "x="+s.last[k] {
			continue
		}
		if err := b.Observe(ctx, s.key(k), map[string]any{"x": s.last[k]}); err != nil {
			s.violate("observe k%d again on its owner: %v", k, err)
		}
	}
}

// check asserts that each key's last value is handled, as its owner
// shows it.
func (s *shardRunState) check(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.cfg.keys {
		if s.last[k] == "" {
			continue
		}
		st, _, err := s.buses[s.owner[k]].Status(ctx, s.key(k))
		if err != nil {
			s.violate("status of k%d: %v", k, err)
			continue
		}
		if want := "x=" + s.last[k]; st.Message != want {
			s.violate("lost: k%d's last value %s not handled: its owner bus%d shows %q", k, s.last[k], s.owner[k], st.Message)
		}
		if s.running[k] != 0 {
			s.violate("k%d: %d handler calls still running at quiescence", k, s.running[k])
		}
	}
}

func TestSimulationShards(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	seeds, deadline := simBounds(t, seeds)
	start, runs, failed := time.Now(), 0, 0
	for i := 0; i < len(seeds) || time.Now().Before(deadline); i++ {
		seed := rand.Uint64() % 1_000_000_000
		if i < len(seeds) {
			seed = seeds[i]
		}
		cfg, ops := genShards(seed)
		runs++
		if v := runShards(t, cfg, ops); len(v) > 0 {
			failed++
			var b strings.Builder
			for _, o := range ops {
				b.WriteString(" " + o.String())
			}
			t.Errorf("seed %d (%d buses, %d keys, %d workers, slow store %v): %s\nops:%s\nreplay: OPBUS_SIM_SEED=%d go test -run '^TestSimulationShards$' -v .",
				seed, cfg.buses, cfg.keys, cfg.workers, cfg.slow, strings.Join(v, "\n  "), b.String(), seed)
			if failed >= 3 {
				break
			}
		}
	}
	t.Logf("%d sequences in %v (%.0f operations/s); %d hand-offs, %d while a pass of the key ran, %d abandoning one",
		runs, time.Since(start).Round(time.Millisecond), float64(runs*40)/time.Since(start).Seconds(),
		shardStats.handoffs.Load(), shardStats.midPass.Load(), shardStats.abandoned.Load())
}

// TestSimulationShardsAbandonBeforeTake replays, many times, a sequence
// whose Release of k0 with a deadline already past came while a worker
// held k0 but had not yet taken its queued value 14 from the queue: the
// abandoned worker then took it, its pass's results were dropped, and
// Release, having seen no state in flight, saved nothing, so that k0's
// last value was never handled (lost on about 2% of replays; the
// interleaving depends on the scheduler). An abandoned key now takes no
// more states, and Release saves the current state of an abandoned key
// whose pass had taken none, as of any other (rule 48); either change
// alone makes this replay pass.
func TestSimulationShardsAbandonBeforeTake(t *testing.T) {
	cfg, ops := genShards(531336974)
	for i := range 400 {
		if v := runShards(t, cfg, ops); len(v) > 0 {
			t.Fatalf("replay %d of seed %d: %s", i, cfg.seed, strings.Join(v, "\n  "))
		}
	}
}
