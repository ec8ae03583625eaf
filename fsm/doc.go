// Package fsm keeps a lifecycle state machine per object on an
// [opbus.Bus]: the states an object goes through, the events that move it,
// guards on those events and a status for each state, persisted in the
// object's record and driven by the object's own changes.
//
// It is built on github.com/looplab/fsm, which stays an implementation
// detail: users declare a [Spec] and never see looplab's types, callback
// keys or errors.
//
// # Declaring a machine
//
// A [Spec] is plain data: a name, an initial state, [State]s (each with an
// optional [opbus.Status]) and [Trigger]s (an event, its source states, its
// destination, an optional [Guard]). [New] validates it and reports every
// mistake, each naming the offending item: a trigger naming an undeclared
// state, an event or state declared twice, an empty or malformed name, an
// undeclared initial state. A state that cannot be reached from the initial
// state is an error too, since it is nearly always a misspelt source or
// destination; a state kept only because old records may hold it is marked
// [State.Retired] instead.
//
// # State, status and persistence
//
// A machine keeps one state per object, in a value of the object's record
// named "fsm/<machine>" (see [ValuePrefix]), committed with each dispatch,
// so it survives restarts and Juju's process per hook. The bus loads the
// record before any handler of a dispatch runs, so every handler sees the
// same, current state, whatever its registration order; an object with no
// recorded state is in the initial state. [Machine.Register] gives the
// machine a status slot named after it: on each change of state the slot
// takes the new state's Status, so the object's overall status follows its
// lifecycle. Register also adds a handler "<machine>/state" that records
// the initial state (and its status) when an object is first seen, checks
// the recorded state when the program starts again, and forgets the object
// when it is deleted.
//
// A recorded state that the machine does not declare (written by another
// version of the program) is never reset: it is an error wrapping
// [ErrUnknownState] that names the object and the state, reported in the
// slot of the state handler, by [Machine.State] and by [Machine.Fire].
//
// # Firing events
//
// Handlers fire events with [Machine.Fire], passing the event they handle.
// An event the current state does not allow is an error naming the event,
// the state and the events it allows ([ErrNotAllowed]); a guard's refusal
// is an error wrapping the guard's reason ([ErrRefused]); either way the
// state is unchanged. A self-transition is a result, not an error: the
// [Result] lists it as a step whose From equals its To.
//
// # Rules
//
// A [Rule] declares "on a change of field F where P holds, fire E" without
// writing a handler: [Machine.AddRule] turns it into a bus handler subscribed to
// F. A rule fires only from its event's source states, so rules on one
// field can drive different transitions in different states.
//
// # State-limited handlers
//
// [Machine.In] returns a predicate for [opbus.On].When, so that a handler
// runs only while its object is in given states:
//
//	bus.Handle("serve", serve, opbus.On{Fields: []string{"spec"}, When: m.In("running")})
//
// Skipped while the object is elsewhere, the handler commits nothing, and
// runs once the object is in one of the states if its value still differs
// from the one it last handled.
//
// # Chaining transitions
//
// Calling looplab's Event from its before- and leave-callbacks deadlocks
// (looplab/fsm issue 36), and its callbacks cannot return errors. Here
// guards return errors, and no user code runs while looplab holds its
// locks except guards, which cannot fire: a [Machine.Fire] for an object
// already firing returns [ErrInTransition] at once rather than block. To
// chain, give a state an Enter [Action]: it runs after a transition into
// the state has completed and been recorded, and returns the next event to
// fire (or ""), which the same Fire then fires, up to [MaxChain]
// transitions. The Result lists every step.
//
// # Diagrams
//
// [Machine.Mermaid] and [Machine.Graphviz] draw the declared machine, in
// declaration order, for documentation.
//
// # Concurrency
//
// A Machine is safe for concurrent use by handlers of different objects.
// The bus dispatches each object on one goroutine at a time; Fire is meant
// to be called from a handler, for the object it handles. The machine
// keeps under 200 bytes per object it has fired for, made on first use
// and dropped when the object is deleted, and lends each Fire a looplab
// machine set to the state in the object's record; it holds no state of
// its own that the record does not.
package fsm
