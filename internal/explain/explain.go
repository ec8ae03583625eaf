// Package explain answers "why did this handler run, or not?" for one
// object: from the facts a bus or a stored record gives it, it decides a
// reason for every handler and collector and renders the report as text
// and JSON.
//
// It holds the policy of the answer only: the root package gathers the
// facts of a live bus (Bus.Explain), cmd/opbus those of a stored record
// (FromWire). Both give the same report, so a person reads one format.
//
// Invariants:
//   - Every handler gets exactly one Reason, decided by Decide in a fixed
//     order (collector, filtered by kind, filtered by type, failure,
//     handled, create-only, unknown value, held, Options.Runs, When,
//     changed): the first that applies is the answer.
//   - A report holds no document values, only digests, statuses and
//     times: it is safe to show wherever a status is (values may hold
//     secrets).
package explain

import (
	"time"
)

// Reason says why a handler is, or is not, up to date with its object.
type Reason string

// The reasons, as they appear in JSON.
const (
	// Handled: the current value at its fields is the one it last
	// handled successfully (digests equal).
	Handled Reason = "handled"
	// Scheduled: handled, and waiting for a run its schedule asks for
	// (On.Every or Event.Again), at NextDue.
	Scheduled Reason = "scheduled"
	// NeverRan: it has handled no value of this incarnation.
	NeverRan Reason = "never-ran"
	// Ran: it handled a value; whether that is the current one is not
	// known (from a record alone, or a value it reads is not digested
	// here).
	Ran Reason = "ran"
	// Failed: it failed on the current value and is retried at NextRetry.
	Failed Reason = "failed"
	// FailedPermanently: it failed for good on the current value; it runs
	// again only when the value changes.
	FailedPermanently Reason = "failed-permanently"
	// SkippedByWhen: the current value was dispatched and differs from
	// the one it handled, but its On.When returned false.
	SkippedByWhen Reason = "skipped-by-when"
	// NotRunHere: the bus's Options.Runs passes it over.
	NotRunHere Reason = "not-run-here"
	// FilteredByKind: On.Kinds does not hold the object's kind.
	FilteredByKind Reason = "filtered-by-kind"
	// FilteredByType: On.Types holds no event type the object is in (a
	// delete- or resume-only handler on a live object, a create-only
	// handler on an object it created already).
	FilteredByType Reason = "filtered-by-type"
	// Held: the current state waits behind another state of the same
	// object (queued, being handled, or a deletion not finished).
	Held Reason = "held"
	// Coalesced: held, and earlier states of the object were coalesced
	// away past the backlog bound: it will not see them.
	Coalesced Reason = "coalesced"
	// Changed: the current value differs from the one it handled and
	// nothing holds it: it runs at the object's next pass.
	Changed Reason = "changed"
	// Collector: a collector, evaluated at every commit of the object.
	Collector Reason = "collector"
)

// Key names the object, as the bus's Key does.
type Key struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Status is a slot's status as stored: its level word, message and reason.
type Status struct {
	Level   string `json:"level"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Report explains one object.
type Report struct {
	Key Key `json:"key"`
	// Source says where the facts come from: "bus" or "record".
	Source string `json:"source"`
	// At is when the report was made, on the bus's clock.
	At time.Time `json:"at"`
	// Status is the overall status of the slots.
	Status *Status `json:"status,omitempty"`
	// Incarnation is the record's incarnation; Ended, when the record is
	// a tombstone, when that incarnation's deletion finished.
	Incarnation string    `json:"incarnation,omitempty"`
	Ended       time.Time `json:"ended,omitzero"`
	// Observed reports that a current state of the object is known.
	Observed bool `json:"observed"`
	// Deleted reports that the latest observed state is a deletion.
	Deleted bool `json:"deleted,omitempty"`
	// Queue is what waits in the bus for this object.
	Queue Queue `json:"queue"`
	// Pending are the states the record holds, saved when a bus stopped
	// before handling them, oldest first.
	Pending []Pending `json:"pending,omitempty"`
	// Related are the related objects the handlers last saw, with the
	// digest of the state they saw.
	Related []Related `json:"related,omitempty"`
	// Values are the named values kept with the record.
	Values map[string]string `json:"values,omitempty"`
	// Handlers are the handlers then the collectors, in registration
	// order (from a record: in ID order).
	Handlers []Handler `json:"handlers"`
	// Notes say what the report cannot tell.
	Notes []string `json:"notes,omitempty"`
}

// Queue is the state of an object's queue in a running bus.
type Queue struct {
	Queued    int  `json:"queued"`              // states queued
	Running   bool `json:"running,omitempty"`   // a pass holds the object
	Blocked   bool `json:"blocked,omitempty"`   // the queue waits for a deletion or a record load to be retried
	Coalesced bool `json:"coalesced,omitempty"` // a queued state had earlier states coalesced away
}

// Pending is a state saved in the record.
type Pending struct {
	Deleted bool `json:"deleted,omitempty"`
}

// Related is a related object and the digest of its state last seen.
type Related struct {
	Key    string `json:"key"`
	Digest string `json:"digest,omitempty"` // "" when known from memory only
}

// Handler explains one handler or collector.
type Handler struct {
	ID     string `json:"id"`
	Reason Reason `json:"reason"`
	// Detail is the reason as a sentence.
	Detail string `json:"detail"`
	// Handled is the digest of the value it last handled; Current that
	// of the current value at its fields, when known.
	Handled string `json:"handled,omitempty"`
	Current string `json:"current,omitempty"`
	// Attempt counts the failed runs on the current value.
	Attempt   int        `json:"attempt,omitempty"`
	NextRetry *time.Time `json:"nextRetry,omitempty"`
	// Error is the failure's text, as its slot shows it.
	Error string `json:"error,omitempty"`
	// NextDue is when its schedule runs it next; Every its period, Again
	// that the schedule is an Event.Again rather than On.Every.
	NextDue *time.Time `json:"nextDue,omitempty"`
	Every   string     `json:"every,omitempty"`
	Again   bool       `json:"again,omitempty"`
	// Slot is its status slot; Good the slot of its last success, kept
	// while it fails.
	Slot *Status `json:"slot,omitempty"`
	Good *Status `json:"good,omitempty"`
}
