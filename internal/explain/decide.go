package explain

import (
	"fmt"
	"strings"
	"time"
)

// Facts are what is known of one handler on one object. Digests are in
// their stored form (unpadded URL-safe base64); "" means none.
type Facts struct {
	ID        string
	Collector bool
	// Registered reports that the handler's registration is known (a
	// live bus); from a record alone, kinds, types, When and Runs are not.
	Registered bool
	Kinds      []string // On.Kinds; empty: any
	KindOK     bool     // the object's kind is among Kinds
	Types      []string // the event types it receives
	Live       bool     // it receives Create or Update
	CreateOnly bool     // it receives Create and not Update
	HasWhen    bool     // it has On.When
	RunsHere   bool     // Options.Runs lets it run
	Stored     string   // digest of the value it last handled
	Current    string   // digest of the current value; "" if unknown
	Fail       *Failure
	Timer      *Timer
	Slot, Good *Status
}

// Failure is a handler's failure on one value.
type Failure struct {
	On        string    // digest of the value it failed on
	N         int       // failed attempts
	At        time.Time // next attempt; zero: at the next pass
	Permanent bool
}

// Timer is a handler's schedule.
type Timer struct {
	Next  time.Time
	Every time.Duration
	Again bool // set by Event.Again, not On.Every
}

// Object are the facts of the object that bear on every handler.
type Object struct {
	Now     time.Time
	Queue   Queue
	Deleted bool
}

// held reports whether the current state is not dispatched yet.
func (o *Object) held() bool { return o.Queue.Queued > 0 || o.Queue.Running || o.Queue.Blocked }

// Decide explains one handler: the first reason that applies, in the
// order the package documentation gives.
func Decide(o *Object, f *Facts) Handler {
	h := Handler{ID: f.ID, Handled: f.Stored, Current: f.Current, Slot: f.Slot, Good: f.Good}
	if f.Timer != nil {
		next := f.Timer.Next.UTC()
		h.NextDue, h.Every, h.Again = &next, f.Timer.Every.String(), f.Timer.Again
	}
	h.Reason, h.Detail = decide(o, f, &h)
	return h
}

func decide(o *Object, f *Facts, h *Handler) (Reason, string) {
	switch {
	case f.Collector:
		return Collector, "a collector: evaluated at every commit of the object"
	case f.Registered && !f.KindOK:
		return FilteredByKind, fmt.Sprintf("On.Kinds is %v: not this object's kind", f.Kinds)
	case f.Registered && !f.Live && !o.Deleted:
		return FilteredByType, fmt.Sprintf("On.Types is %v: it does not run on a live object's changes", f.Types)
	}
	if fl := f.Fail; fl != nil && (f.Current == "" || fl.On == f.Current) {
		return failed(o, f, h)
	}
	switch {
	case f.Current != "" && f.Current == f.Stored:
		if f.Timer != nil {
			return Scheduled, "handled; " + due(o, f)
		}
		return Handled, "the current value at its fields is the one it last handled"
	case f.Registered && f.CreateOnly && f.Stored != "":
		return FilteredByType, "On.Types is [Create]: it handled this incarnation's creation and runs on no update"
	case f.Current == "":
		return unknown(o, f)
	case o.held() && o.Queue.Coalesced:
		return Coalesced, held(o) + "; earlier states were coalesced past the backlog bound: it will not see them"
	case o.held():
		return Held, held(o)
	case f.Registered && !f.RunsHere:
		return NotRunHere, "Options.Runs passes it over on this bus"
	case f.Registered && f.HasWhen && f.Stored == "":
		return SkippedByWhen, "it has handled no value of this incarnation, and its On.When returned false for the current one: it runs once When holds"
	case f.Registered && f.HasWhen:
		return SkippedByWhen, "the current value differs from the one it last handled, and its On.When returned false for it: it runs once When holds"
	}
	if f.Stored == "" {
		return NeverRan, "it has handled no value of this incarnation; the current state runs it at the object's next pass"
	}
	return Changed, "the current value differs from the one it last handled: it runs at the object's next pass"
}

// failed explains a handler failing on the current value.
func failed(o *Object, f *Facts, h *Handler) (Reason, string) {
	fl := f.Fail
	h.Attempt = fl.N
	if f.Slot != nil && f.Slot.Level == "error" {
		h.Error = f.Slot.Message
	}
	what := "it failed"
	if f.Current == "" {
		what = "it failed on the value of digest " + fl.On
	}
	if fl.Permanent {
		return FailedPermanently, fmt.Sprintf("%s for good (attempt %d): it runs again only when the value changes", what, fl.N)
	}
	if fl.At.IsZero() {
		return Failed, fmt.Sprintf("%s (attempt %d); retried at the object's next pass", what, fl.N)
	}
	at := fl.At.UTC()
	h.NextRetry = &at
	return Failed, fmt.Sprintf("%s (attempt %d); next retry %s", what, fl.N, when(o.Now, at))
}

// unknown explains a handler whose current value is not known.
func unknown(o *Object, f *Facts) (Reason, string) {
	switch {
	case f.Stored == "" && f.Timer == nil:
		return NeverRan, "it has handled no value of this incarnation"
	case f.Timer != nil:
		return Scheduled, "it handled a value; " + due(o, f)
	case f.Registered:
		return Ran, "it handled a value; the current value is not known here (no state observed, or it reads related objects)"
	}
	return Ran, "it handled a value; whether it is the current one cannot be told from the record"
}

func held(o *Object) string {
	var parts []string
	if o.Queue.Running {
		parts = append(parts, "a pass of the object is running")
	}
	if o.Queue.Queued > 0 {
		parts = append(parts, fmt.Sprintf("%d state(s) queued", o.Queue.Queued))
	}
	if o.Queue.Blocked {
		parts = append(parts, "the queue waits for an unfinished deletion or record load to be retried")
	}
	return "the current state waits behind another state of the object: " + strings.Join(parts, ", ")
}

func due(o *Object, f *Facts) string {
	t := f.Timer
	what := fmt.Sprintf("On.Every %v", t.Every)
	switch {
	case !f.Registered:
		what = fmt.Sprintf("a schedule (On.Every or Event.Again) of %v", t.Every)
	case t.Again:
		what = fmt.Sprintf("Event.Again(%v)", t.Every)
	}
	return fmt.Sprintf("%s: next run due %s", what, when(o.Now, t.Next.UTC()))
}

// when renders t, and how far it is from now.
func when(now, t time.Time) string {
	s := t.Format(time.RFC3339)
	if now.IsZero() {
		return "at " + s
	}
	if d := t.Truncate(time.Second).Sub(now.Truncate(time.Second)); d > 0 {
		return fmt.Sprintf("at %s (in %v)", s, d)
	} else if d < 0 {
		return fmt.Sprintf("at %s (%v ago: at the next pass)", s, -d)
	}
	return "at " + s + " (now)"
}
