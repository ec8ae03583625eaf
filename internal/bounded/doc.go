// Package bounded is a map that keeps at most a fixed number of entries,
// for a memory that must not grow without bound, such as the bus's memory
// of the keys it forgot after their deletion: a lost entry costs work
// done again, never a wrong result.
//
// # Invariant
//
// A Map never holds more than its bound: Put into a full map first drops
// one entry, chosen arbitrarily (Go's map order), then adds its own.
//
// A Map does not lock: the caller guards it.
package bounded
