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
		Note: "opbus.Compare; from bytes it decodes with encoding/json."},
	{Name: "jsondiff", Returns: "patch", FullDiff: true,
		Note: "github.com/wI2L/jsondiff rejects int64, which client-go produces, so it is given encoding/json's float64 decoding of the same bytes (CompareWithoutMarshal); from bytes it is CompareJSON."},
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
		Note: "opbus.Compare of the two objects, then Diff.Touches(status.containerStatuses). The per-subscription digest (issue 3) is not in the table yet."},
	{Name: Floor, Returns: "changed?", Baseline: true,
		Note: "The floor: look up the subtree on both sides and walk it."},
}
