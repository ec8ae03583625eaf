//go:build !race

package jsoncompare

const raceEnabled = false
