//go:build race

package opbus

// raceEnabled reports that the race detector is on: load tests then run at
// a tenth of their scale, and scripts/test runs them whole without it.
const raceEnabled = true
