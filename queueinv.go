package opbus

// The per-key queue is internal/keyqueue, whose invariants its package
// documentation states and keyqueue.Queue.Check asserts: at most one
// holder per key, listed means on the ready list, the pending and queued
// counts, one armed retry timer per key and none after a stop, awaiting
// counts, idle keys forgotten. What they mean for the bus, and the bus's
// own, hold whenever Bus.mu is not held by a goroutine in the middle of
// changing the queue; checkQueue, set by tests (TestSimulation checks
// them at every step), asserts both:
//
//  1. The bus keeps no copy of the queue's state of a key: what is
//     queued, held, blocked or due is asked of the keyqueue (nothing to
//     check).
//  2. The queue drains only when the bus stops (Bus.stop): Drain at Run's
//     normal stop, Halt at a halt.
//  3. Pending counts the listing: the keyqueue counts one unit of work
//     outside it exactly while the store's pending states are being
//     looked for (Bus.resumed under way) and the bus is not stopping (a
//     listing cut short by the stop leaves the states in the store). Wait
//     returns when nothing is pending.
//  4. A key is forgotten (leaves queues.keys) only with an empty queue.
//  5. In flight means held: a key whose state is kept in lanes.flying for
//     shutdown is held, or parked on its write.
//  6. Slots: at most Options.Workers passes hold a handler slot.
//  7. Parked means held: a key parked on its write (writeq.Parking, whose
//     own invariants hold) stays held, by the write's goroutine, until a
//     lane takes it over or that goroutine lets it go.
//
// What the words mean for the bus: a state is *queued* until a pass takes
// it; a key is *held* while a pass (a lane of Run, a Dispatch call, a Wait
// before Run, or the goroutine of a write it is parked on: the keyqueue's
// HandOver) makes its passes; it *waits for a retry* while blocked (a
// deletion or a record load unfinished: the queue does not move) or until
// its retry timer makes the retry due. At drain (Run's normal stop)
// nothing new is taken, held keys finish or are abandoned, and every
// queued state, due retry and state in flight is saved as pending; at a
// halt nothing more is written.

// checkQueue, when set (by tests), is called with Bus.mu held after every
// change of the queue, and reports a broken invariant.
var checkQueue func(b *Bus)

// queueChanged runs checkQueue, if set; b.mu is held.
func (b *Bus) queueChanged() {
	if checkQueue != nil {
		checkQueue(b)
	}
}
