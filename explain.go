package opbus

import (
	"context"
	"slices"

	"github.com/opbus/opbus/internal/explain"
	stored "github.com/opbus/opbus/internal/record"
)

// Explanation is what [Bus.Explain] returns: why each handler of one
// object did or did not run, and the object's status, queue, pending
// states, incarnation, relations and values; JSON-ready, String for a
// person. It holds no document values.
type Explanation = explain.Report

// HandlerExplanation explains one handler or collector of an Explanation.
type HandlerExplanation = explain.Handler

// Reason is why a handler is, or is not, up to date with its object; see
// the Explain rules in docs/semantics.md.
type Reason = explain.Reason

// The reasons of a [HandlerExplanation].
const (
	ReasonHandled           = explain.Handled           // current value handled
	ReasonScheduled         = explain.Scheduled         // handled; a schedule runs it at NextDue
	ReasonNeverRan          = explain.NeverRan          // no value of this incarnation handled
	ReasonRan               = explain.Ran               // handled a value; the current one is not known
	ReasonFailed            = explain.Failed            // failed on the current value; retried at NextRetry
	ReasonFailedPermanently = explain.FailedPermanently // failed for good on the current value
	ReasonSkippedByWhen     = explain.SkippedByWhen     // On.When returned false
	ReasonNotRunHere        = explain.NotRunHere        // Options.Runs passes it over
	ReasonFilteredByKind    = explain.FilteredByKind    // On.Kinds excludes the object's kind
	ReasonFilteredByType    = explain.FilteredByType    // On.Types excludes what the object is in
	ReasonHeld              = explain.Held              // behind another state of the object
	ReasonCoalesced         = explain.Coalesced         // held, earlier states coalesced away
	ReasonChanged           = explain.Changed           // value changed; runs at the next pass
	ReasonCollector         = explain.Collector         // a collector, run at every commit
	ReasonSlotOnly          = explain.SlotOnly          // from a record alone: a slot with nothing else
)

// Explain reports, for every handler and collector registered on b, why
// it did or did not run for the object of key: whether the latest state
// observed of key is handled at the handler's fields, and if not why not
// (see the Explain rules in docs/semantics.md). It reads the record from
// the store, as [Bus.Status] does for an object not dispatched, and the
// queue and latest state from memory; it runs no handler, collector or
// When, and writes nothing. A record that cannot be read is a *[RecordError].
func (b *Bus) Explain(ctx context.Context, key Key) (*Explanation, error) {
	if err := key.validate(); err != nil {
		return nil, err
	}
	o := explain.Object{Now: b.now()}
	r := &Explanation{Key: explain.Key(key), Source: "bus", At: o.Now.UTC()}
	var cur map[string]any
	var published Slots
	b.mu.Lock()
	index, handlers, collectors := b.reg.index, b.reg.handlers, b.reg.collectors
	if ks := b.q.keys[key]; ks != nil {
		items := b.q.kq.Items(ks)
		cur, o.Queue = ks.last, explain.Queue{Queued: len(items), Running: b.q.kq.Held(ks), Blocked: b.q.kq.Blocked(ks)}
		for _, q := range items {
			o.Queue.Coalesced, o.Deleted = o.Queue.Coalesced || q.coalesced, q.deleted
		}
		if ks.shown {
			published = ks.published.clone()
		}
	}
	for child, parents := range func() map[Key][]Key {
		if b.rel == nil {
			return nil
		}
		return b.rel.parents
	}() {
		if slices.Contains(parents, key) {
			r.AddRelated(explain.Related{Key: child.String()})
		}
	}
	b.mu.Unlock()
	rec, err := b.readRecord(ctx, key, index)
	if err != nil {
		return nil, err
	}
	r.Observed, r.Deleted, r.Queue = cur != nil, o.Deleted, o.Queue
	if rec == nil {
		rec = newRecord(len(handlers))
		r.Notes = append(r.Notes, "no record is stored for the object: no handler has committed anything for it")
	}
	if published == nil {
		published = rec.Slots
	}
	if len(published) > 0 { // as Status returns it
		r.Status = explainStatus(published.Summary())
	}
	for _, h := range handlers {
		f := b.handlerFacts(h, key, cur, rec)
		r.Handlers = append(r.Handlers, explain.Decide(&o, &f))
		if len(h.rel) > 0 && cur != nil {
			r.Notes = append(r.Notes, "handler "+h.id+" reads related objects: its current value is not digested here")
		}
	}
	for _, c := range collectors {
		r.Handlers = append(r.Handlers, explain.Decide(&o, &explain.Facts{ID: c.id, Collector: true, Slot: slotOf(rec.Slots, c.id)}))
	}
	explain.AddRecord(r, &rec.Record)
	return r, nil
}

// handlerFacts gathers what the bus knows of h on the object of key: its
// registration, the digest of the current state cur (nil if none), and
// its part of the record.
func (b *Bus) handlerFacts(h *handler, key Key, cur map[string]any, rec *record) explain.Facts {
	f := explain.Facts{
		ID: h.id, Registered: true, Kinds: h.kinds, KindOK: h.forKind(key.Kind),
		Live: h.wants(Create) || h.wants(Update), CreateOnly: h.wants(Create) && !h.wants(Update),
		HasWhen: h.when != nil, RunsHere: b.cfg.runs == nil || b.cfg.runs(h.id),
		Slot: slotOf(rec.Slots, h.id), Good: slotOf(rec.Good, h.id),
	}
	for t := Create; t <= Resume; t++ {
		if h.wants(t) {
			f.Types = append(f.Types, t.String())
		}
	}
	if cur != nil && len(h.rel) == 0 {
		if d, err := digestWrites(b.cmpOf(h, key.Kind), cur, h.fields, h.rev, h.writes); err == nil {
			f.Current = stored.EncodeDigest(d)
		}
	}
	if d := rec.Digests[h.idx]; !d.isZero() {
		f.Stored = stored.EncodeDigest(d)
	}
	f.Fail = explain.FailureOf(rec.Fails[h.id])
	if s := rec.schedOf(h.id); s != nil {
		f.Timer = &explain.Timer{Next: s.Next(), Every: s.Every, Again: s.Every != h.every}
	}
	return f
}

func slotOf(s Slots, id string) *explain.Status {
	if st, ok := s[id]; ok {
		return explainStatus(st)
	}
	return nil
}

func explainStatus(s Status) *explain.Status {
	return &explain.Status{Level: s.Level.String(), Message: s.Message, Reason: s.Reason}
}
