package opbus

// The per-key queue's invariants. They hold whenever Bus.mu is not held by
// a goroutine in the middle of changing the queue, and checkQueue, set by
// tests (TestSimulation checks them at every step), asserts them:
//
//  1. At most one holder per key: a key is held (keyState.busy) exactly
//     when it is in queues.busy, once. acquire is the only way in, release
//     the only way out; nobody acquires a held key.
//  2. Ready means listed: a key is in queues.ready exactly when
//     keyState.queuedNow, once. A listed key may be held (a Dispatch call
//     took it, or its write runs beside with no lane: parked); whoever
//     takes it from the list then checks (workOne).
//  3. Pending counts: queues.pending is the number of keys listed or held,
//     plus one while the store's pending states are being looked for
//     (resumeListing) and the bus is not stopping (a listing cut short by
//     the stop leaves the states in the store). Wait returns when it is
//     zero.
//  4. Queued counts: queues.queued is the number of states in the queues of
//     the keys the bus knows; a key is forgotten only with an empty queue.
//  5. In flight means held: a key whose state is kept in lanes.flying for
//     shutdown is held, or parked on its write.
//  6. Slots: at most Options.Workers passes hold a handler slot.
//
// What the words mean: a state is *queued* in keyState.queue until a pass
// takes it; a key is *held* while a pass (a lane of Run, a Dispatch call,
// a Wait before Run, or the goroutine of a write it is parked on) makes
// its passes; it *waits for a retry* while keyState.blocked (a deletion or
// a record load unfinished: the queue does not move) or until its retry
// timer sets retryDue. At drain (Run's normal stop) nothing new is taken,
// held keys finish or are abandoned, and every queued state, due retry and
// state in flight is saved as pending; at a halt nothing more is written.

// checkQueue, when set (by tests), is called with Bus.mu held after every
// change of the queue, and reports a broken invariant.
var checkQueue func(b *Bus)

// queueChanged runs checkQueue, if set; b.mu is held.
func (b *Bus) queueChanged() {
	if checkQueue != nil {
		checkQueue(b)
	}
}
