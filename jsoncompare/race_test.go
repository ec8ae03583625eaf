//go:build race

package jsoncompare

// raceEnabled reports that the race detector is on: sync.Pool then drops
// walkers at random, so allocation counts do not hold.
const raceEnabled = true
