package juju

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/explain"
)

// ExplainArg is the argument that makes [Main] explain instead of running
// a hook: ./dispatch explain, run as Juju runs hook tools
// (juju exec --unit app/0 -- ./dispatch explain). Juju runs dispatch with
// no argument in hooks and actions.
const ExplainArg = "explain"

// Explain writes to w why each handler of the charm did or did not run
// for the unit and its application (JUJU_UNIT_NAME), from the records in
// the unit's state, read with state-get, and the handlers setup registers:
// the record's reasons (rule 45 of docs/semantics.md: failures, schedules,
// slots, "ran"), every registered handler the record does not name as
// never-ran (or filtered-by-kind), and a note for a handler the record
// names that is no longer registered. It runs no handler and writes
// nothing. opts are Run's (Getenv, Runner, StateKey, Bus); the rest is
// ignored.
func Explain(ctx context.Context, w io.Writer, setup func(*opbus.Bus) error, opts *Options) error {
	if opts == nil {
		opts = &Options{}
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	unit := getenv("JUJU_UNIT_NAME")
	app, err := unitApp(unit)
	if err != nil {
		return fmt.Errorf("juju: explain: JUJU_UNIT_NAME: %w (run it as Juju runs hook tools: juju exec --unit app/0 -- ./dispatch explain)", err)
	}
	var bo opbus.Options
	if opts.Bus != nil {
		bo = *opts.Bus
	}
	bo.Store, bo.Logger = nil, nil
	bus, err := opbus.New(&bo)
	if err != nil {
		return fmt.Errorf("juju: explain: %w", err)
	}
	if err := setup(bus); err != nil {
		return fmt.Errorf("juju: explain: the charm's setup: %w", err)
	}
	key := opts.StateKey
	if key == "" {
		key = DefaultStateKey
	}
	value, err := Tools{Runner: opts.Runner}.StateGetKey(ctx, key)
	if err != nil {
		return fmt.Errorf("juju: explain: %w", err)
	}
	records := map[string]json.RawMessage{}
	if value != "" {
		if err := json.Unmarshal([]byte(value), &records); err != nil {
			return fmt.Errorf("juju: explain: state key %q does not hold a JSON object of records: %v", key, err)
		}
	}
	now := time.Now()
	if bo.Clock != nil {
		now = bo.Clock.Now()
	}
	for i, k := range []opbus.Key{{Kind: ObjectUnit, Name: unit}, {Kind: ObjectApplication, Name: app}} {
		r, err := explainKey(k, records[k.String()], bus, now)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprint(w, r)
	}
	return nil
}

// explainKey explains the record data of key (nil for none) as of now,
// with what bus registers.
func explainKey(key opbus.Key, data []byte, bus *opbus.Bus, now time.Time) (*opbus.Explanation, error) {
	r := &opbus.Explanation{Key: explain.Key(key), Source: "record", Notes: []string{explain.RecordNote}}
	if data != nil {
		var err error
		if r, err = explain.Read(explain.Key(key), data, now); err != nil {
			return nil, fmt.Errorf("juju: explain: %w", err)
		}
	} else {
		r.At = now.UTC()
		r.Notes = append(r.Notes, "no record: nothing has been committed for it")
	}
	named := map[string]bool{}
	for _, h := range r.Handlers {
		named[h.ID] = true
	}
	registered := map[string]bool{}
	for _, s := range bus.Subscriptions() {
		registered[s.ID] = true
		switch {
		case named[s.ID]:
		case len(s.Kinds) > 0 && !slices.Contains(s.Kinds, key.Kind):
			r.Handlers = append(r.Handlers, opbus.HandlerExplanation{ID: s.ID, Reason: opbus.ReasonFilteredByKind, Detail: fmt.Sprintf("On.Kinds is %v: not this object's kind", s.Kinds)})
		default:
			r.Handlers = append(r.Handlers, opbus.HandlerExplanation{ID: s.ID, Reason: opbus.ReasonNeverRan, Detail: "registered, and has recorded nothing for this object: it has not run, or ran without committing (a failed hook commits nothing)"})
		}
	}
	for _, h := range r.Handlers {
		if h.Reason != opbus.ReasonSlotOnly && !registered[h.ID] {
			r.Notes = append(r.Notes, "handler "+h.ID+" is in the record but not registered by this charm: a handler that comes back runs again")
		}
	}
	return r, nil
}
