// Package wake holds the ways a goroutine waits without a lock: for a
// chance of work ([Token]), for a span of time on a given clock ([Sleep]),
// and for a channel to close within a time ([Within]). All are channels
// underneath, so that a wait can also end with a stop signal or a
// context, and a goroutine that waits is durably blocked for
// testing/synctest.
//
// # Invariants
//
//   - A Token holds at most one token. Offer never blocks: a token offered
//     while one waits is the same chance, not a second one. So that no
//     chance is lost, a consumer that takes work offers again when work
//     may be left for another; a consumer may wake and find nothing.
//   - Sleep returns nil only once its time has passed on the clock it is
//     given, else the context's error; Within reports true only if its
//     channel closed before its time passed. Each stops its timer when it
//     returns.
package wake
