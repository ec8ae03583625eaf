package opbus

import (
	"context"
	"fmt"
	"time"
)

// Event is what a handler is given: one observed state of one object.
type Event struct {
	Type EventType
	Key  Key
	// Old is the state the handler last handled successfully in this
	// process, or the previously observed state; nil on create and after a
	// restart. New is the current state; nil on delete.
	Old, New map[string]any
	// Changes are the changes from Old to New that concern the handler: the
	// changes within its fields, with absolute paths (use [Diff.Under] to
	// re-root them), or every change not ignored for a whole-object handler.
	Changes Diff
	// Handler is the ID of the handler being run.
	Handler string
	// Attempt counts the runs of this handler for this value: 1, then 2 on
	// the first retry, and so on.
	Attempt int
	// ID correlates every log line of one dispatch of one object.
	ID string
	// Coalesced reports that states observed between Old and New were
	// skipped because the object's backlog passed its bound.
	Coalesced bool
	// Due reports a run due to the handler's schedule ([On.Every] or
	// [Event.Again]) rather than to a change of its value.
	Due bool

	d     *pass         // the dispatch this event belongs to, for values and slots
	again time.Duration // asked for by Again
}

// Object returns New, or Old when the object is gone.
func (ev *Event) Object() map[string]any {
	if ev.New != nil {
		return ev.New
	}
	return ev.Old
}

// Value returns a named value persisted with the object (for example the
// state of a state machine), and whether it is set.
func (ev *Event) Value(name string) (string, bool) {
	if ev.d == nil {
		return "", false
	}
	v, ok := ev.d.rec.Values[name]
	return v, ok
}

// SetValue persists a named value with the object, committed with the rest
// of the dispatch whatever the handler returns. An empty value deletes it.
// Outside a dispatch (an Event a test built) it is an error.
func (ev *Event) SetValue(name, value string) error {
	if ev.d == nil {
		return fmt.Errorf("opbus: SetValue(%q): the event is not being dispatched", name)
	}
	ev.d.setValue(name, value)
	return nil
}

// SetSlot sets the status in a slot registered with [Bus.AddSlot] (such as a
// state machine's). A handler's own slot is set by what it returns.
func (ev *Event) SetSlot(id string, s Status) error {
	if ev.d == nil {
		return fmt.Errorf("opbus: SetSlot(%q): the event is not being dispatched", id)
	}
	return ev.d.setSlot(id, s)
}

// HandlerFunc handles an event. A nil error commits: the handler will not
// run again for this value, and the returned Status goes into its slot (the
// zero Status clears it). An error is retried with backoff, or as
// [RetryAfter] asks, or not until the value changes if it is [Permanent];
// the slot shows the returned Status if it is not zero, else an Error
// status with the error's message. A panic is recovered and treated as an
// error. ctx is cancelled when the bus shuts down past its deadline.
type HandlerFunc func(ctx context.Context, ev *Event) (Status, error)

// CollectFunc computes a status for an object at every commit of it, as
// ops' collect-status does. obj is nil when the object is gone.
type CollectFunc func(ctx context.Context, key Key, obj map[string]any) Status

// On says which events a handler receives. The zero On means create and
// update of any object, for any change that is not ignored.
type On struct {
	// Types lists the event types; empty means Create and Update.
	Types []EventType
	// Kinds lists the object kinds; empty means any kind.
	Kinds []string
	// Fields lists path patterns; the handler runs when the value at any of
	// them differs from the one it last handled. Empty means the whole
	// object, less ignored paths.
	Fields []string
	// When, if set, must return true for the handler to run. A handler
	// skipped by When commits nothing, so it runs once When holds if its
	// value still differs from the one it last handled.
	When func(ev *Event) bool
	// Revision names the version of the handler's logic. It is part of the
	// handler's digests: changing it makes the handler run once more for
	// every object, so that fixed logic re-evaluates values that the old
	// logic handled.
	Revision string
	// Every, if positive, also runs the handler every Every even if its
	// value did not change, as kopf's timers do: on the grid of due times
	// that starts at its first success on an object, kept across restarts
	// (a restart neither resets it nor makes up missed runs one by one:
	// they collapse into one run). A due run that fails is retried as any
	// other; the grid resumes after it succeeds. The schedule ends with
	// the object's incarnation. It needs Create or Update in Types, and
	// is at most 100 years (a schedule counts time in Unix nanoseconds,
	// which end in 2262).
	Every time.Duration
	// KeepOld stores the value of Fields that the handler last handled in
	// the object's record, so that after a restart its first event has
	// that value as Old (with only those fields) and Changes against it,
	// instead of Old == nil and every field as an add: an upgrade handler
	// learns the version it comes from. Off by default, since the record
	// grows by it; a value of more than 4 KiB in its stored form is not kept
	// (with a warning). It needs Fields.
	KeepOld bool
	// Writes lists path patterns (as in Fields) of the handler's own
	// object that the handler writes itself, such as the status fields it
	// reports. They are left out of its digests and its Changes, also
	// inside a subscribed subtree (Fields [status] with Writes
	// [status.readyReplicas]), so that its own writes never run it again;
	// every other handler sees them as any change. A Writes path that
	// covers one of Fields whole is an error: the handler could never run
	// on it. Writes is part of the handler's digests, as Revision is:
	// changing it runs the handler once more for every object.
	Writes []string
}

// maxKeptOld bounds the value [On].KeepOld keeps per handler and object,
// in bytes of its stored form.
const maxKeptOld = 4 << 10
