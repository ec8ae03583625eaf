//go:build !race

package opbus

const raceEnabled = false
