// Package keyqueue is a per-key ordered queue: items of many keys are
// added in order, and at most one holder at a time takes the items of a
// key, oldest first, while other keys' items are taken by other holders.
// It is generic over its key K and its item T.
//
// # Words
//
//   - An item is *queued* from Add (or PushFront) until a holder takes it.
//     Each item gets a sequence number, in order of arrival.
//   - A key is *listed* (ready) when it has work and no holder, or when
//     its holder would hand it over ([Options.HandOver]); Next pops the
//     first listed key. A key has work when an item is queued and the key
//     is not blocked, or when a retry is due.
//   - A key is *held* from Hold until Release: its holder alone takes its
//     items (Take) and its retries (TakeRetry).
//   - A key *waits for a retry* while it is blocked (its items do not
//     move: Block) or while its retry timer is armed (RetryAt). When the
//     timer fires, the retry is *due*: the key is listed, and its holder
//     takes the retry before any item.
//   - An item is *awaited* when it was added by a caller that waits to
//     take it itself (AddAwaited, then Await): no other holder takes it,
//     and the queue hands the key to that caller when nothing else holds
//     it and no older awaited item of another caller is first.
//   - The queue is *pending* while a key is listed or held, or while work
//     it cannot see is counted (Outside); Idle's channel closes when
//     nothing is pending.
//
// # Invariants
//
// Check asserts them; they hold whenever the lock is not held by a
// goroutine in the middle of a call:
//
//  1. At most one holder per key: a key is held exactly when it is in the
//     held set, once. Hold is the only way in, Release the only way out;
//     nobody holds a held key.
//  2. Listed means on the ready list, once: a key is on the ready list
//     exactly when it is marked listed. A listed key has work, or had when
//     it was listed; whoever pops it checks again.
//  3. Pending counts: Pending is the number of listed keys plus held keys,
//     plus one while work outside the queue is counted (Outside).
//  4. Queued counts: Len is the number of items across all keys, and each
//     key's items are in order of arrival, except items put back at the
//     front by their holder (PushFront).
//  5. Retries: a key has at most one armed retry timer, the last armed
//     for it (a retry may be due while a later one is armed). After Drain
//     or Halt no timer is armed.
//  6. Awaited: a key is awaited exactly while a caller waits in Await for
//     it, and the count is that of the callers waiting.
//  7. A key is forgotten only when it holds nothing: no item, no holder,
//     not listed, no timer, no due retry, not blocked, not awaited.
//
// # Drain and halt
//
// Drain is a normal stop: no key is popped or handed over any more
// (Next reports none, Await returns [ErrDraining]), holders finish and
// Release; armed retry timers are stopped and their retries made due, so
// that the caller finds them (Due) with the queued items to save them.
// Halt is a stop at once: the same, but armed retries are dropped, not
// made due (their keys have no retry due); nothing is to be saved. Waits in Await and WaitChange end at
// either.
//
// # Locking
//
// A Queue is guarded by the lock it is given ([Options.Lock]), which the
// caller holds across every call, so that the queue's state and the
// caller's own change together. Methods that wait (Await, WaitChange,
// WaitReleased) release the lock while they wait and hold it again on
// return; each wait also ends with its context. Timers take the lock when they fire.
package keyqueue
