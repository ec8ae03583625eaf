// Package perhandler keeps what the passes of one key know of each of its
// handlers between passes, beside the key's record: which handlers are
// clean, which owe a Resume run, and what each failing handler last
// handled. Handlers are named by their registration index.
//
// Invariants:
//   - A clean handler's committed digest is that of the key's current
//     state, so a pass whose diff does not touch its fields may skip
//     computing it. Only the first 64 handlers are ever marked clean;
//     the digest of the others is always computed.
//   - A Resume run is owed only by the Bus that noted it (Owe), to a
//     handler that wanted Resume then; paying it (Paid) is final until
//     the next Owe.
//   - Behind holds, for a handler that is failing, the state it last
//     handled successfully: the first failure notes it (FellBehind) and a
//     later one keeps it, so the handler's next event is measured from
//     there; a success or a recovery forgets it (Forget).
//
// Everything here belongs to the goroutine dispatching the key. A nil
// *State reads as the zero State: clean of nothing owed, behind nothing.
package perhandler
