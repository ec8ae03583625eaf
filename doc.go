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
// hand-written documents). [validDocument] reports anything else.
//
// The door — [Bus.Observe], [Bus.Dispatch] and their update and delete
// forms — also takes the Go values whose JSON form is evident from their
// kind: maps with string keys (a map[string]string of labels), slices and
// arrays (a []string), named string, bool and number types, and pointers
// to these. Handlers see them in the form above: map[string]any, []any,
// string, bool, int64 or uint64, float64; numbers compare by value, so a
// converted int32 3 and a decoded float64 3 are one value. A document
// that needs no conversion is not copied; one that does is copied where it
// changes, never modified. A struct, whose JSON form follows its field
// tags, a []byte, and a type with its own MarshalJSON or MarshalText are
// errors there: [Document] converts them, through encoding/json. Every
// error at the door is returned by the call, names the key, the path and
// the Go type, and leaves nothing queued.
//
// # Reading fields
//
// [Get] reads a field as a Go type, by a path written as for [ParsePath]:
// Get[string](ev.New, "spec.containers[name=app].image"). A whole number
// reads as any integer type whatever its Go type (encoding/json and Juju's
// hook tools give float64); a field that is missing or null is an error
// that wraps [ErrAbsent], so an optional field gets its default with
// errors.Is; any other mismatch names the path and both types. A struct,
// map or slice type reads through its JSON form, and [Decode] decodes a
// document, or a part of one, into a struct the same way.
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
// [Diff.Touches] tells whether a field changed, [apply] replays a diff.
// Package github.com/opbus/opbus/jsoncompare returns the same Diff for two
// JSON texts without decoding them: equal parts are compared as bytes, and
// only what differs is decoded.
//
// # Subscriptions
//
// [Bus.Handle] registers a handler under an ID, which also names its status
// slot, with filters in [On]: event types, kinds, field paths, a predicate.
// A handler runs when the digest of the values at its fields differs from
// the digest committed at its last success: level-triggered, once per
// distinct value. Status is data: a change of status.containerStatuses
// fires its handlers like any other change. Only the API server's per-write
// noise (metadata.resourceVersion, managedFields, generation), paths
// declared with [Options].Ignore or [Bus.Ignore], and paths the Store and
// the StatusSink declare as their own writes ([PathWriter]) are ignored, so
// the library's writes never trigger anyone. Consequences: a restart does
// not re-run handled values (the digests are stored), a change made while
// the program was down is handled on resume, and a failed handler runs
// again.
//
// A handler that writes part of its own object (a status field it
// reports) declares those paths in [On].Writes: they are left out of its
// own digests and Changes, so its writes never run it again, while every
// other handler sees them as any change.
//
// A pass does only the work its subscriptions need: when every handler of
// a kind that takes changes names fields, it compares the subtrees that
// hold them, not the whole object, and computes the digest only of a
// handler whose fields the changes may touch.
//
// # Related objects
//
// [Bus.Relate] declares that objects of a kind relate to others (a
// Deployment to the WebApp that owns it): a function from a related
// object's key and state to the keys it relates to. A handler then reads
// them under the reserved field [RelatedField], with the ordinary path
// grammar: related.Deployment[*].status.readyReplicas runs the WebApp's
// handler once per distinct readiness of its Deployments, and a Deployment
// that appears or disappears is a change too. A related object's change is
// queued on each object it relates to (and on those it related to before),
// in order with their own states; one change costs the same whether an
// object has one related object or a thousand.
//
// # Handlers and results
//
// A [HandlerFunc] returns a [Status] and an error. A nil error commits the
// digest and puts the Status in the handler's slot (the zero Status clears
// it). An error is retried with [Backoff], or after the delay [RetryAfter]
// asks for, or not until the value changes for [Permanent]; the slot shows
// the returned Status if there is one, else an Error status with the
// message. A panic is recovered, logged with its stack, and treated as an
// error ([PanicError]). [Bus.Collect] registers collectors evaluated at
// every commit, like ops' collect-status; they own slots too.
//
// "Not done yet, look again later" is a result, not an error: a handler
// calls [Event.Again] and returns its own status (such as [Waiting]) with
// a nil error; it runs again after the delay even if nothing changed. A
// handler with [On].Every also runs every period (kopf's timers), on a
// grid kept in the object's record, so restarts neither reset nor burst
// it; a run that changes nothing writes nothing. [Event].Due marks such
// runs. [Options].Due replaces the clock for one-pass processes (Juju
// hooks).
//
// # Status and slots
//
// A [Status] is a [Level] and a message. Levels are ordered as Juju orders
// them: unknown < active < waiting < maintenance < blocked < error. Every
// handler owns one slot in [Slots]; [Slots.Summary] folds them into the overall
// status: the highest level wins and its message joins the messages of every
// slot at that level in slot-name order, so one handler going active never
// hides another handler's blocked. A status may also say why in a CamelCase
// word for programs ([Status.WithReason]): the overall status takes the
// reason of the first slot at its level that has one, and a reason of
// another syntax fails the handler. Slots persist in the Store; a
// [StatusSink] publishes them when they change.
//
// # Concurrency
//
// States of one object are dispatched in order, one at a time; objects run
// in parallel on a bounded pool of workers ([Options].Workers). A backlog
// past [Options].MaxBacklog is coalesced to the latest state, which sets
// [Event].Coalesced and counts in [Stats] and the [Observer]. [Bus.Run]
// drains on shutdown and saves states it could not handle in their
// records, so the next run handles them. [Bus.Dispatch] handles one state
// synchronously, for one-shot programs such as Juju hooks.
//
// # Sharing keys between buses
//
// Buses that share a store (replicas, each with a share of the objects)
// hand keys to each other: the owner calls [Bus.Release], which returns
// once no pass or write of those keys runs and has saved their unhandled
// states in their records, then the next owner calls [Bus.Acquire],
// which queues those states. Digests, failures, schedules and slots come
// with the records, so once per value holds across a hand-off. A bus that
// does not own a key refuses it with [ErrNotOwned].
//
// # Explaining
//
// [Bus.Explain] tells why each handler did or did not run for an object:
// handled, failed (attempt, next retry, error), scheduled, skipped by
// When, filtered, held, coalesced, never ran; the command opbus explain
// (cmd/opbus) tells the same from a stored record.
//
// # Writing an adapter
//
// An adapter is a source, a [Store] and a [StatusSink]. The source calls
// [Bus.Observe] (or [Bus.ObserveUpdate] when it knows the previous state,
// or [Bus.ObserveDelete]); it passes objects it will not modify, and the
// bus keeps a reference, not a copy. The Store and the sink implement
// [PathWriter] to declare what they write into objects. [Bus.Subscriptions]
// tells which fields handlers read, so a source can fetch only those.
//
// # Writing a Store
//
// A [Store] loads, saves and deletes one opaque record per key; the bus
// encodes records as versioned JSON and reports a record it cannot read
// (errors.Is(err, [ErrCorruptRecord])) instead of overwriting it. Run the
// conformance suite in package opbustest against every implementation.
//
// # Errors
//
// Errors start with "opbus:" and name the bad input. Callers branch with
// errors.As on [*PathError], [*ValueError], [*RecordError] and
// [*PanicError], and with errors.Is on [ErrPermanent], [ErrCorruptRecord],
// [ErrClosed] and [ErrAbsent].
package opbus
