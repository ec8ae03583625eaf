package fsm

import (
	"context"

	lfsm "github.com/looplab/fsm"

	"github.com/opbus/opbus"
)

// runner is a looplab machine, lent to one Fire at a time and set to the
// state in the object's record before it fires. Objects share runners
// rather than each keeping one: looplab builds its transition and callback
// maps per machine, 0.9–1.4 KB per object for machines of 2–10 triggers
// (fsm BenchmarkMemoryPerObject).
type runner struct {
	f   *lfsm.FSM
	cur *stateInfo   // f's current state, read without its lock
	ev  *opbus.Event // the event being fired for, given to guards; nil without guards
}

// runner lends a runner, made if none is free; give it back with release.
func (m *Machine) runner() *runner {
	if r, ok := m.runners.Get().(*runner); ok {
		return r
	}
	r := &runner{cur: m.states[m.spec.Initial]}
	r.f = m.newFSM(r)
	return r
}

// release gives r back and ends the Fire of in.
func (m *Machine) release(in *instance, r *runner) {
	r.ev = nil
	m.runners.Put(r)
	in.busy.Store(false)
}

// newFSM builds the looplab machine of r. Guards run in looplab's
// before-event callback, so that a refusal is looplab's cancellation and
// leaves its state alone. The callback key is generated here, never
// written by users: one catch-all key rather than "before_<event>" per
// event, since looplab reads keys by prefix and an event named "event"
// would turn a per-event key into the catch-all.
func (m *Machine) newFSM(r *runner) *lfsm.FSM {
	var callbacks lfsm.Callbacks
	if m.guarded {
		callbacks = lfsm.Callbacks{"before_event": func(ctx context.Context, e *lfsm.Event) { m.guard(ctx, r, e) }}
	}
	return lfsm.NewFSM(m.spec.Initial, m.events, callbacks)
}

func (m *Machine) guard(ctx context.Context, r *runner, e *lfsm.Event) {
	out := r.cur.edge(e.Event)
	if out == nil || out.trig.Guard == nil {
		return
	}
	if err := out.trig.Guard(ctx, r.ev, Transition{Event: e.Event, From: e.Src, To: e.Dst}); err != nil {
		e.Cancel(err)
	}
}

// setState puts r's looplab machine in st.
func (r *runner) setState(st *stateInfo) {
	if r.cur != st {
		r.f.SetState(st.Name)
		r.cur = st
	}
}
