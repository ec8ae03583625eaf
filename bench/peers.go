package bench

// A Peer describes one entry of a benchmark family: what it is, for the report. The
// benchmarks themselves live in the _test.go files, keyed by the same names, in the same
// order (TestPeerInfo checks that).
type Peer struct {
	// Name is the last element of the benchmark name.
	Name string

	// Returns says what the entry produces: "diff" (a list of changes with their
	// paths), "patch" (a JSON patch document), "text" (a report for people), "bool"
	// (equality only), or, in the detect family, "changed?".
	Returns string

	// FullDiff marks entries that produce a full diff (diff, patch or text), which
	// opbus's Compare is measured against.
	FullDiff bool

	// Baseline marks entries that are not peers but yardsticks (the floor walk,
	// reflect.DeepEqual): they never count as the fastest peer.
	Baseline bool

	// Note is a short remark shown under the table.
	Note string
}

// Floor is the name of the entry every ratio "to the floor" divides by: a plain recursive
// equality walk over both trees, measured in the same run.
const Floor = "walk"

// Opbus is the name of opbus's own entry in every family.
const Opbus = "opbus"

// DiffPeers are the entries of the BenchmarkDiff and BenchmarkDiffBytes families.
var DiffPeers = []Peer{
	{Name: Opbus, Returns: "diff", FullDiff: true,
		Note: "opbus.Compare; from bytes, jsoncompare.Compare (github.com/opbus/opbus/jsoncompare), which compares the texts without decoding them and decodes only the values that differ."},
	{Name: "jsondiff", Returns: "patch", FullDiff: true,
		Note: "github.com/wI2L/jsondiff rejects int64, which client-go produces, so it is given encoding/json's float64 decoding of the same bytes (CompareWithoutMarshal); from bytes it is its CompareJSON."},
	{Name: "go-cmp", Returns: "text", FullDiff: true,
		Note: "github.com/google/go-cmp cmp.Diff."},
	{Name: "r3labs", Returns: "diff", FullDiff: true,
		Note: "github.com/r3labs/diff/v3 diff.Diff."},
	{Name: "json-patch-merge", Returns: "patch", FullDiff: true,
		Note: "github.com/evanphx/json-patch/v5 CreateMergePatch takes bytes: from decoded objects the json.Marshal of both sides is timed too."},
	{Name: "strategicpatch", Returns: "patch", FullDiff: true,
		Note: "k8s.io/apimachinery strategicpatch.CreateTwoWayMergePatch with corev1.Pod{} as the schema: Pod fixtures only; bytes in, like CreateMergePatch."},
	{Name: "semantic-deepequal", Returns: "bool",
		Note: "k8s.io/apimachinery equality.Semantic.DeepEqual: equality only, stops at the first difference."},
	{Name: "reflect-deepequal", Returns: "bool", Baseline: true,
		Note: "reflect.DeepEqual: equality only, stops at the first difference."},
	{Name: Floor, Returns: "bool", Baseline: true,
		Note: "The floor: a plain recursive walk of both trees that visits every node (as a diff must) and records nothing."},
}

// Detectors are the entries of the BenchmarkDetect family.
var Detectors = []Peer{
	{Name: "shell-operator", Returns: "changed?",
		Note: "shell-operator with a Go filter: extract the subtree, marshal it (github.com/goccy/go-json, as shell-operator does), MD5 it, compare with the cached checksum."},
	{Name: "shell-operator-jq", Returns: "changed?",
		Note: "shell-operator with a jqFilter: deep-copy the object, run the compiled gojq program, marshal, MD5, compare."},
	{Name: "generation-predicate", Returns: "changed?",
		Note: "controller-runtime predicate.GenerationChangedPredicate: compares metadata.generation only, so it ignores status and misses a container terminating."},
	{Name: "custom-predicate", Returns: "changed?",
		Note: "controller-runtime predicate.Funcs whose UpdateFunc compares the subtree with equality.Semantic.DeepEqual: what a user writes to see status changes."},
	{Name: Opbus + "-compare", Returns: "changed?",
		Note: "opbus.Compare of the two objects, then Diff.Touches(status.containerStatuses): the diff half of opbus's detection, without digests or bookkeeping."},
	{Name: Opbus + "-bus-dispatch", Returns: "changed?",
		Note: "opbus's real per-subscription detection through its public entry point: bus.Dispatch of the new state on a bus with one handler on status.containerStatuses (in-memory store, Kubernetes list keys). It diffs against the state dispatched before, skips the handler when the diff does not touch its field, else digests the field and compares with the digest of the handler's last success; on a difference it runs the empty handler and commits the digest and the record. Dispatches alternate old → new → old, each the same change; it reports a change when the handler ran."},
	{Name: Floor, Returns: "changed?", Baseline: true,
		Note: "The floor: look up the subtree on both sides and walk it."},
}

// DispatchPeers are the entries of the BenchmarkDispatch family.
var DispatchPeers = []Peer{
	{Name: Opbus, Returns: "handler calls",
		Note: "opbus: bus.Run with 4 workers, bus.Observe from the feeders, bus.Wait at the end of each round; 20 handlers registered with On{Fields: one field each}, in-memory store, Kubernetes list keys. Per update the bus diffs the new state against the one it dispatched before, digests the fields the diff touches, runs the handlers whose digest changed and commits each object's record (JSON) to the store."},
	{Name: "workqueue-predicate", Returns: "handler calls",
		Note: "client-go typed rate-limiting workqueue (DefaultTypedControllerRateLimiter, no metrics) fed by 20 controller-runtime predicate.Funcs, one per handler, each comparing its field's values in the old and new *unstructured.Unstructured with equality.Semantic.DeepEqual; every match adds (handler, key) to the queue, and 4 workers Get, call the handler's empty reconcile.Func, Forget and Done. The predicates run on the feeders, as on an informer's event-handler goroutines."},
	{Name: Floor, Returns: "handler calls", Baseline: true,
		Note: "The floor: per update, each of the 20 fields looked up on both sides and walked, and the empty handler called at once on a difference; no queue, no workers, nothing kept."},
}

// FSMFloor is the floor of the fsm family: a lookup in a transition table.
const FSMFloor = "table"

// FSMPeers are the entries of the BenchmarkFSM family.
var FSMPeers = []Peer{
	{Name: Opbus + "-bus-fire", Returns: "transition",
		Note: "opbus fsm through its public API: fsm.New, Machine.Register(bus), and a handler that calls Machine.Fire, run by bus.Dispatch of an object whose subscribed field changed. Includes the whole dispatch: diff, digest, the handler, the machine's state and slot committed to the object's record in the in-memory store."},
	{Name: Opbus + "-bus-nofire", Returns: "none", Baseline: true,
		Note: "A yardstick, not a peer: the same bus, machine and dispatches with a handler that reads the machine's state and does not fire. opbus-bus-fire minus this is the machine's share of a transition through the bus."},
	{Name: "looplab", Returns: "transition",
		Note: "github.com/looplab/fsm, bare: FSM.Event with no callbacks (what opbus's fsm is built on)."},
	{Name: "stateless", Returns: "transition",
		Note: "github.com/qmuntal/stateless, bare: StateMachine.FireCtx."},
	{Name: FSMFloor, Returns: "transition", Baseline: true,
		Note: "The floor: the destination looked up in a map keyed by (state, event), an error if absent."},
}
