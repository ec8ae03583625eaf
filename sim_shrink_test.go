package opbus

import (
	"testing"
	"time"
)

// shrinkSim looks for the shortest subsequence of ops that still breaks
// the rule named tag, by delta debugging: it tries removing halves, then
// quarters, and so on down to single operations, keeping any removal after
// which the sequence still fails. Goroutines still interleave freely inside
// a bubble, so a candidate counts as failing if either of two runs fails.
func shrinkSim(t *testing.T, seed uint64, cfg simConfig, ops []simOp, tag string, budget time.Duration) simFailure {
	deadline := time.Now().Add(budget)
	var last []string
	fails := func(cand []simOp) bool {
		for range 2 {
			v := runSim(t, cfg, cand)
			for _, s := range v {
				if tagOf(s) == tag {
					last = v
					return true
				}
			}
		}
		return false
	}
	if !fails(ops) {
		return simFailure{seed: seed, cfg: cfg, ops: ops, violations: []string{"(did not fail again: not shrunk)"}}
	}
	best := last
	n := 2
	for len(ops) >= 2 && time.Now().Before(deadline) {
		chunk := (len(ops) + n - 1) / n
		removed := false
		for start := 0; start < len(ops) && time.Now().Before(deadline); start += chunk {
			cand := append(append([]simOp(nil), ops[:start]...), ops[min(start+chunk, len(ops)):]...)
			if fails(cand) {
				ops, best, removed = cand, last, true
				n = max(n-1, 2)
				break
			}
		}
		if !removed {
			if chunk == 1 {
				break
			}
			n = min(2*n, len(ops))
		}
	}
	return simFailure{seed: seed, cfg: cfg, ops: ops, violations: best}
}
