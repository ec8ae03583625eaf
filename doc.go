// Package opbus is the transport-agnostic core of an operator library: it
// turns each observed state of an object into field-level change events,
// runs the handlers subscribed to the fields that changed, keeps each
// handler's status in its own slot, and folds the slots into one overall
// status. Adapters feed it from Kubernetes watches (adapters/k8s) or Juju
// hooks (adapters/juju).
//
// # Objects and keys
//
// An object is a JSON-like document: map[string]any holding maps, []any,
// strings, bools, nil and numbers (float64 or json.Number from
// encoding/json, int64 from client-go's unstructured objects, int from
// hand-written documents). [Validate] reports anything else.
//
// # Paths
//
// A [Path] addresses a subtree: status.containerStatuses,
// spec.containers[0].image, status.containerStatuses[name=app].state,
// status.conditions[*].status, metadata.annotations["example.com/x"].
// [ParsePath] reads them once, at registration, so a misspelt path is an
// error before anything runs; the error names the input, the byte offset and
// what was expected.
//
// # Diffs
//
// [Compare] returns the [Diff] between two objects: changes {Op, Path, Old,
// New} with Op add, change or remove, sorted by path. A [Comparer] carries
// settings: paths to ignore everywhere (per-write noise such as
// metadata.resourceVersion, and every path the library writes itself) and
// list keys, so that spec.containers is compared by name rather than by
// index. Numbers compare by value, so a Pod decoded by encoding/json equals
// the same Pod decoded by client-go. [Diff.Under] re-roots a diff at a field,
// [Diff.Touches] tells whether a field changed, [Apply] replays a diff.
//
// # Status and slots
//
// A [Status] is a [Level] and a message. Levels are ordered as Juju orders
// them: unknown < active < waiting < maintenance < blocked < error. Every
// handler owns one slot in [Slots]; [Summarize] folds them into the overall
// status: the highest level wins and its message joins the messages of every
// slot at that level in slot-name order, so one handler going active never
// hides another handler's blocked.
//
// # Errors
//
// Errors start with "opbus:" and name the bad input. Callers branch with
// errors.As on [*PathError] and [*ValueError].
package opbus
