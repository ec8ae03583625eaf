// Package sharing is the mechanism by which buses that share a store hand
// keys to each other: which keys a bus owns after its Release and Acquire
// calls ([Ops]), and the contexts of the passes that a Release may
// abandon ([Contexts]). When a key is released, what is saved of it and
// when, is the caller's; this package keeps the bookkeeping.
//
// # Invariants
//
//  1. Ownership is decided by the calls made, in order: the last call
//     whose predicate names a key decides whether the key is owned, and a
//     key that no call names is owned. Calls are only ever added.
//  2. A key has at most one context in a Contexts, made below the first
//     parent it was asked for with, and kept until End; End and Cancel
//     are the only ways to cancel it, End the only way to drop it.
//
// # Locking
//
// Neither type locks: the caller guards each with its own lock, and calls
// the predicates of Ops under it.
package sharing
