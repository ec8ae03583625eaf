package opbus

// TestSimulation drives the real Bus and the reference model (model_test.go)
// with the same seeded random operations inside testing/synctest, checks
// the invariants at every handler call (sim_harness_test.go) and compares
// the bus with the model at quiescence. A failure prints its seed and the
// shortest sequence found that reproduces it (sim_shrink_test.go).
//
//	go test -run '^TestSimulation$' .                        fixed seeds and a few fresh ones
//	OPBUS_SIM_SEED=123 go test -run '^TestSimulation$' -v .  replay one seed
//	OPBUS_SIM_DURATION=10m go test -run '^TestSimulation$' -timeout 0 .
//	OPBUS_SIM_FINDINGS=/tmp/f.md …                           write one shrunk finding per rule broken

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// simBeside counts the passes of the simulation's buses that ran beside
// the write of the pass before, to show that the configurations with
// pipeline set exercise it.
var simBeside atomic.Uint64

// simFixedSeeds always run: twelve that cover both incarnation modes, list
// keys on and off, small backlogs, the file store and revision bumps, then
// seeds that once found a defect (277919526: elements swapping places under
// a [name=app] subscription).
var simFixedSeeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 277919526}

const simOpsPerSequence = 40

// genSequence draws the configuration and operations of a seed.
func genSequence(seed uint64) (simConfig, []simOp) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg := genConfig(r)
	return cfg, genOps(r, cfg, simOpsPerSequence)
}

// runSim runs one sequence in a bubble of its own and returns the broken
// rules, first first.
func runSim(t *testing.T, cfg simConfig, ops []simOp) []string {
	var dir string
	if cfg.fileStore {
		var err error
		if dir, err = os.MkdirTemp(t.TempDir(), "sim"); err != nil {
			t.Fatal(err)
		}
	}
	var violations []string
	stop := watchQueue()
	synctest.Test(t, func(t *testing.T) {
		s := newSimRun(cfg, dir) // its channels belong to the bubble
		s.run(ops)
		violations = s.violations
	})
	return append(violations, stop()...)
}

// check compares the quiescent bus with the model.
func (s *simRun) check() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkTimers()
	ctx := context.Background()
	for k := range s.cfg.keys {
		name := s.cfg.name(k)
		hs, slots := s.m.expected(name, s.gen)
		overall, got, err := s.bus.Status(ctx, s.cfg.key(k))
		if err != nil {
			s.violate("status", "%s: Status: %v", name, err)
			continue
		}
		data, err := s.store.inner.Load(ctx, s.cfg.key(k))
		if err != nil {
			s.violate("status", "%s: Load: %v", name, err)
		}
		for _, e := range s.m.endedEpochs(name) {
			for _, d := range []string{"del", "del2"} {
				if !s.deleteDone[fmt.Sprint(name, "/", e, "/", d)] {
					s.violate("delete-missing", "%s: the deletion of incarnation %d never ran delete handler %s to success or permanent failure", name, e, d)
				}
			}
		}
		// A Resume owed to an incarnation that is gone is owed no more.
		if e, failed := s.resumeFail[fmt.Sprint(s.gen, "/", name)]; failed && slots != nil && e == s.epoch[k] {
			s.violate("resume", "%s: the resume handler failed and was never retried to success", name)
		}
		if slots == nil {
			if len(got) > 0 {
				s.violate("slots", "%s is gone but shows slots %v", name, got)
			}
			if data != nil && !isTombstone(data) {
				s.violate("record", "%s is gone but the store holds its record, not a tombstone: %s", name, data)
			}
			continue
		}
		if data == nil {
			s.violate("record", "%s is live but the store holds no record", name)
		}
		epoch := s.epoch[k]
		for _, id := range slices.Sorted(maps.Keys(hs)) {
			want := hs[id]
			if id == "create" {
				v, ok := s.created[fmt.Sprint(name, "/", epoch)]
				if !ok {
					s.violate("unhandled", "%s: the create handler never succeeded in incarnation %d", name, epoch)
				} else if g := got[id]; g != successStatus(id, name, v) {
					s.violate("slots", "%s: slot create is %v, want %v (its success in this incarnation)", name, g, successStatus(id, name, v))
				}
				continue
			}
			last := s.lastRes[name+"/"+id]
			handled := last.ok && last.epoch == epoch && last.view == want.value
			if lo, seen := s.lastOK[name+"/"+id]; !handled && seen && lo.epoch == epoch && lo.view == want.value {
				handled = true // rule 10: the value returned to the one last handled
			}
			if f, ok := s.forgotten[name]; ok && id == "verdict" && f == epoch && s.gen > s.cfg.removed && handled {
				if lo := s.lastOK[name+"/"+id]; lo.gen <= s.cfg.removed {
					s.violate("rollback", "%s: handler verdict, forgotten by bus %d, is back but did not run again: its last success is of bus %d", name, s.cfg.removed, lo.gen)
				}
			}
			if !handled {
				s.violate("unhandled", "%s: handler %s did not handle the final value %s of incarnation %d; its last result: ok=%v incarnation=%d value %s",
					name, id, want.value, epoch, last.ok, last.epoch, last.view)
			}
		}
		ids := map[string]bool{"opbus": true, "del": true, "del2": true}
		for id := range slots {
			ids[id] = true
		}
		for id := range got {
			ids[id] = true
		}
		exact := true
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			want, g := slots[id], got[id]
			switch {
			case want.dontCare:
				exact = false
			case want.errorOnly:
				exact = false
				if g.Level != LevelError {
					s.violate("slots", "%s: slot %s is %v, want an error", name, id, g)
				}
			case g != want.status:
				s.violate("slots", "%s: slot %s is %q, want %q", name, id, g, want.status)
			}
		}
		if exact {
			want := map[string]Status{}
			for id, e := range slots {
				if !e.status.IsZero() {
					want[id] = e.status
				}
			}
			if w := summarize(want); overall != w {
				s.violate("slots", "%s: overall status %q, want %q", name, overall, w)
			}
		}
	}
}

// simFailure is a failing sequence, shrunk.
type simFailure struct {
	seed       uint64
	cfg        simConfig
	ops        []simOp
	violations []string
}

func (f simFailure) String() string {
	return fmt.Sprintf("seed %d (%v), %d operations:\n%s%s", f.seed, f.cfg, len(f.ops), formatOps(f.ops), "  → "+strings.Join(f.violations, "\n  → "))
}

func tagOf(v string) string { return v[1:strings.IndexByte(v, ']')] }

func TestSimulation(t *testing.T) {
	seeds := slices.Clone(simFixedSeeds)
	for range 4 {
		seeds = append(seeds, rand.Uint64()%1_000_000)
	}
	seeds, deadline := simBounds(t, seeds)
	shrinkBudget := 4 * time.Second
	maxReports := 3
	if !deadline.IsZero() {
		shrinkBudget, maxReports = 30*time.Second, 20
	}
	start := time.Now()
	sequences, opsRun := 0, 0
	findings := map[string]simFailure{} // by the tag of the first rule broken
	reported := 0
	for i := 0; ; i++ {
		var seed uint64
		switch {
		case i < len(seeds):
			seed = seeds[i]
		case !deadline.IsZero() && time.Now().Before(deadline):
			seed = rand.Uint64() % 1_000_000_000
		default:
			seed = 0
		}
		if i >= len(seeds) && seed == 0 {
			break
		}
		if i >= len(simFixedSeeds) {
			t.Logf("seed %d", seed)
		}
		cfg, ops := genSequence(seed)
		stop := watchdog(seed)
		v := runSim(t, cfg, ops)
		stop()
		sequences++
		opsRun += len(ops)
		if len(v) == 0 {
			continue
		}
		tag := tagOf(v[0])
		if _, seen := findings[tag]; seen || reported >= maxReports {
			t.Errorf("seed %d (%v): %s (not shrunk: rule %s already reported)", seed, cfg, v[0], tag)
			continue
		}
		f := shrinkSim(t, seed, cfg, ops, tag, shrinkBudget)
		if len(f.violations) == 1 && strings.HasPrefix(f.violations[0], "(did not fail again") {
			f.violations = append(f.violations, v...) // what the first run saw
		}
		findings[tag] = f
		reported++
		t.Errorf("simulation failed: %v\nreplay: OPBUS_SIM_SEED=%d go test -run '^TestSimulation$' -v .", f, seed)
	}
	took := time.Since(start)
	t.Logf("%d sequences, %d operations in %v: %.0f operations/s; %d passes ran beside a write (rule 22c)", sequences, opsRun, took.Round(time.Millisecond), float64(opsRun)/took.Seconds(), simBeside.Load())
	if path := os.Getenv("OPBUS_SIM_FINDINGS"); path != "" && len(findings) > 0 {
		var b strings.Builder
		for _, tag := range slices.Sorted(maps.Keys(findings)) {
			fmt.Fprintf(&b, "## %s\n\n```\n%v\n```\n\n", tag, findings[tag])
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// watchdog ends the test process if one sequence runs for more than two
// minutes of real time, naming its seed, rather than hanging the suite.
func watchdog(seed uint64) (stop func()) {
	tm := time.AfterFunc(30*time.Second, func() {
		panic(fmt.Sprintf("TestSimulation: seed %d has run for 30 s of real time: a hang or a busy loop (replay with OPBUS_SIM_SEED=%d)", seed, seed))
	})
	return func() { tm.Stop() }
}

// simBounds returns what a simulation runs: seeds until the deadline
// OPBUS_SIM_DURATION sets (zero: the seeds alone), or the one seed
// OPBUS_SIM_SEED names, for a replay.
func simBounds(t *testing.T, seeds []uint64) ([]uint64, time.Time) {
	t.Helper()
	var deadline time.Time
	if d := os.Getenv("OPBUS_SIM_DURATION"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("OPBUS_SIM_DURATION=%q: %v", d, err)
		}
		deadline = time.Now().Add(dur)
	}
	if s := os.Getenv("OPBUS_SIM_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("OPBUS_SIM_SEED=%q: %v", s, err)
		}
		return []uint64{seed}, time.Time{}
	}
	return seeds, deadline
}
