package opbus

import (
	"reflect"
)

// A preDiff was what Observe found comparing an update with the state
// observed before it, base: the changes within the subscribed subtrees,
// found by a walk that also checked the update at the door, for a pass
// whose state before is base to take instead of comparing again. Nothing
// makes one any more: that third mode of the diff walk cost more
// allocations per Dispatch (23 against 22, 58 against 51 for a typed
// document) than the second walk it saved, with no difference in time
// the benchmarks could show (BenchmarkDispatch, figures in the commit
// that retired it). An update is admitted by the door's own check and a
// pass compares it (rule 5c). The type and the call that returns none
// stay until admit (queue.go) and the pass (pass.go) drop their use.
type preDiff struct {
	base map[string]any
	cmp  *Comparer
	diff Diff
}

// precompare returns nil: see [preDiff].
func (b *Bus) precompare(string, *Comparer, map[string]any, map[string]any) *preDiff {
	return nil
}

// sameMap reports whether a and b are the same map, not only equal ones.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
