package fsm

import (
	"context"
	"fmt"
	"sync/atomic"

	lfsm "github.com/looplab/fsm"

	"github.com/opbus/opbus"
)

// MaxChain bounds the transitions one call to [Machine.Fire] makes, chained
// ones included, so that Enter actions that keep returning events end in
// an error instead of looping.
const MaxChain = 64

// Result reports what a call to [Machine.Fire] did.
type Result struct {
	// From is the state before the call; To is the state after it, chained
	// events included.
	From, To string

	first Transition   // the first step, if Event is set
	more  []Transition // chained steps after it
}

// Changed reports whether the state after the call differs from the state
// before it.
func (r Result) Changed() bool { return r.From != r.To }

// Steps returns the transitions made and recorded, in order: the fired
// event's, then chained ones. A self-transition is a step whose From equals
// its To. It returns nil if none was made.
func (r Result) Steps() []Transition {
	if r.first.Event == "" {
		return nil
	}
	return append([]Transition{r.first}, r.more...)
}

func (r *Result) add(t Transition) {
	if r.first.Event == "" {
		r.first = t
	} else {
		r.more = append(r.more, t)
	}
}

// steps returns how many transitions r holds.
func (r *Result) steps() int {
	if r.first.Event == "" {
		return 0
	}
	return 1 + len(r.more)
}

// recorder keeps an object's state: the event being dispatched (which
// commits to the object's record), or a map in benchmarks.
type recorder interface {
	valuer
	SetValue(name, value string) error
	SetSlot(id string, s opbus.Status) error
}

// instance is what the machine keeps for one object: that it is being
// fired for. It is used by one Fire at a time (busy); the object's state
// is in its record, and the looplab machine that fires it is lent for the
// call (see runner).
type instance struct {
	key  opbus.Key // the object's
	busy atomic.Bool
}

// Fire fires event for the object of ev, from inside a handler that is
// handling ev. The machine's state for the object is read from its record
// (the initial state if none is recorded); on a change the new state is
// written to the record and the machine's slot is set to the new state's
// Status, both committed with the dispatch. Then the new state's Enter
// action, if any, runs, and the event it returns is fired in turn.
//
// A self-transition is a result (a step with From equal to To), not an
// error; Enter does not run for it. Errors leave the state as it was
// before the failing step and name the machine, the object, the event and
// the state: an event the state does not allow ([ErrNotAllowed], listing
// the allowed events), one the machine does not declare
// ([ErrUnknownEvent]), a guard's refusal ([ErrRefused], wrapping the
// guard's reason), an unknown stored state ([ErrUnknownState]), a call
// made during a transition of the same object ([ErrInTransition]), a
// chain longer than [MaxChain], an Enter action's error, or ctx ending
// before the transition. Transitions made before the failing step stand
// and are listed in the Result.
func (m *Machine) Fire(ctx context.Context, ev *opbus.Event, event string) (Result, error) {
	if ev == nil {
		return Result{}, fmt.Errorf("fsm: machine %q: Fire(%q) with a nil event", m.spec.Name, event)
	}
	return m.fire(ctx, ev, ev, event)
}

func (m *Machine) fire(ctx context.Context, ev *opbus.Event, rec recorder, event string) (Result, error) {
	in := m.instance(ev.Key)
	if !in.busy.CompareAndSwap(false, true) {
		return Result{}, m.busyErr(ev.Key, event)
	}
	r := m.runner()
	defer m.release(in, r)
	from, stored := r.cur.Name, true
	if v, ok := rec.Value(m.value); !ok || v != from {
		// The record is the truth: restore from it, checking what it holds.
		var err error
		if from, stored, err = m.current(ev.Key, rec); err != nil {
			return Result{}, err
		}
		r.setState(m.states[from])
	}
	if m.guarded {
		r.ev = ev
	}
	res := Result{From: from, To: from}
	for event != "" {
		if res.steps() == MaxChain {
			return res, m.loopErr(ev.Key, res.To, event)
		}
		t, st, err := m.step(ctx, r, ev.Key, event)
		if err != nil {
			return res, err
		}
		if st == nil { // a self-transition
			res.add(t)
			break
		}
		if err := m.record(rec, ev.Key, st); err != nil {
			r.setState(m.states[t.From])
			return res, err
		}
		res.add(t)
		res.To, stored = t.To, true
		if st.Enter == nil {
			break
		}
		if event, err = st.Enter(ctx, ev, t); err != nil {
			return res, m.enterErr(ev.Key, t, err)
		}
	}
	if !stored {
		return res, m.record(rec, ev.Key, m.states[from])
	}
	return res, nil
}

// The errors of fire are made out of its line, so that its frame holds
// none of their formatting (its frame was 1,072 bytes with them, about
// 600 without; busyErr is small enough to be inlined back).

//go:noinline
func (m *Machine) busyErr(key opbus.Key, event string) error {
	return m.errorf(ErrInTransition, nil, key, "Fire(%q) during a transition of the object (from a guard or an Enter action, or from another goroutine): chain events by returning them from State.Enter", event)
}

func (m *Machine) loopErr(key opbus.Key, state, event string) error {
	return fmt.Errorf("fsm: machine %q on %v: Fire made %d transitions and Enter of %q still returned %q: Enter actions loop", m.spec.Name, key, MaxChain, state, event)
}

func (m *Machine) enterErr(key opbus.Key, t Transition, err error) error {
	return fmt.Errorf("fsm: machine %q on %v: entering %q by %q: %w", m.spec.Name, key, t.To, t.Event, err)
}

// record writes st into rec as the object's state: the machine's slot,
// then its value.
func (m *Machine) record(rec recorder, key opbus.Key, st *stateInfo) error {
	if err := rec.SetSlot(m.spec.Name, st.Status); err != nil {
		return m.recordErr(key, st.Name, err)
	}
	if err := rec.SetValue(m.value, st.Name); err != nil {
		return m.recordErr(key, st.Name, err)
	}
	return nil
}

func (m *Machine) recordErr(key opbus.Key, state string, err error) error {
	return fmt.Errorf("fsm: machine %q on %v: recording state %q: %w", m.spec.Name, key, state, err)
}

// step makes one transition with looplab. It returns the transition and
// the state it leads to, nil for a self-transition.
func (m *Machine) step(ctx context.Context, r *runner, key opbus.Key, event string) (Transition, *stateInfo, error) {
	from := r.cur
	if err := r.f.Event(ctx, event); err != nil {
		return m.stepErr(ctx, r, key, event, from.Name, err)
	}
	dst := from.edge(event).dst
	r.cur = dst
	return Transition{Event: event, From: from.Name, To: dst.Name}, dst, nil
}

// stepErr translates looplab's error for event in state from: a
// self-transition, or an error of Fire's.
func (m *Machine) stepErr(ctx context.Context, r *runner, key opbus.Key, event, from string, err error) (Transition, *stateInfo, error) {
	switch e := err.(type) {
	case lfsm.NoTransitionError:
		if e.Err == nil {
			return Transition{Event: event, From: from, To: from}, nil, nil
		}
	case lfsm.InvalidEventError:
		return Transition{}, nil, m.errorf(ErrNotAllowed, nil, key, "event %q not allowed in state %q (allowed: %s)", event, from, list(m.states[from].allowed))
	case lfsm.UnknownEventError:
		return Transition{}, nil, m.errorf(ErrUnknownEvent, nil, key, "unknown event %q (declared: %s)", event, m.declEvs)
	case lfsm.CanceledError:
		return Transition{}, nil, m.errorf(ErrRefused, e.Err, key, "event %q refused by its guard in state %q: %v", event, from, e.Err)
	}
	// Anything else (ctx ended during the guard, so looplab abandoned the
	// transition) can leave looplab's machine marked as in transition for
	// good: replace it.
	r.f = m.newFSM(r)
	r.cur = m.states[m.spec.Initial]
	r.setState(m.states[from])
	if ctx.Err() != nil {
		return Transition{}, nil, fmt.Errorf("fsm: machine %q on %v: event %q in state %q: %w", m.spec.Name, key, event, from, ctx.Err())
	}
	return Transition{}, nil, fmt.Errorf("fsm: machine %q on %v: event %q in state %q: %v", m.spec.Name, key, event, from, err)
}
