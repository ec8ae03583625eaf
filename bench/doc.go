// Package bench compares opbus with its peers on the same fixtures in the same run.
//
// It is a module of its own so that the peers (k8s.io/*, controller-runtime, the JSON
// diff libraries) never reach the library's go.mod. The package holds no code of its
// own: everything is in its _test.go files.
//
// Families:
//
//   - BenchmarkDiff/<fixture>/<lib>: a structural diff (or an equality check) of two
//     already decoded objects. Fixtures: pod (one container goes running → terminated),
//     pod-equal (two separately decoded copies of the same Pod), big (~200 KB, one leaf
//     changed), deep (30 levels of maps, one leaf changed at the bottom).
//   - BenchmarkDiffBytes/<fixture>/<lib>: the same from JSON bytes, including decoding
//     both sides, since watch events arrive as bytes.
//   - BenchmarkDetect/<fixture>/<approach>: does status.containerStatuses differ between
//     two versions of a Pod, the way each framework decides whether to run a handler.
//
// The fixtures are the files in ../testdata/fixtures, written by
// go run ./internal/fixturegen from the repository root.
//
// Run everything and write results/ (raw output, benchstat, report.md):
//
//	bench/run                       # -count 6: 12-16 minutes on 2 busy cores
//	COUNT=1 BENCHTIME=1x bench/run  # a quick check that nothing rotted (CI)
//
// or a single family by hand:
//
//	cd bench && GOWORK=off go test -run '^$' -bench 'Diff/' -benchmem
package bench
