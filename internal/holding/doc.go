// Package holding marks in a context the keys whose passes are under way,
// so that a call made with such a context can tell that it would wait for
// a pass it is part of: a handler of a key, or anything it calls, that
// asks to dispatch that same key.
//
// A caller that holds a key for a run of passes wraps the context it
// gives them ([With]) and ends the holding when it lets the key go
// ([Holding.End]). Each holding links to the one of the context it was
// made from, so a context names every key held by the passes it descends
// from, through other keys' handlers too.
//
// # Invariant
//
// [Holds](ctx, k) reports true exactly when ctx descends from a holding
// of k made by With whose End has not been called. A context that
// outlives its pass (kept by a goroutine a handler started) holds nothing
// once that pass's holding has ended.
//
// A Holding is a context of its own rather than a context.WithValue, so
// that marking a key costs one allocation, not two.
package holding
