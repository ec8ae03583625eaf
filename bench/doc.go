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
//     both sides, since watch events arrive as bytes (opbus: jsoncompare.Compare,
//     which reads the texts without decoding them).
//   - BenchmarkDetect/<fixture>/<approach>: does status.containerStatuses differ between
//     two versions of a Pod, the way each framework decides whether to run a handler;
//     opbus both as Compare + Diff.Touches and as its real per-subscription detection,
//     a bus.Dispatch with one handler on the field.
//   - BenchmarkDispatch/pod-10k/<approach>: observed updates per second from a source
//     to 20 field-subscribed empty handlers over 10,000 Pods: opbus's bus (Run, Observe,
//     Wait) against a client-go workqueue fed by controller-runtime predicates. One op
//     is one update; results carry updates/s, ns/update and calls/update.
//   - BenchmarkFSM/toggle/<impl>: one state-machine transition: opbus's fsm through its
//     public API (a bus.Dispatch whose handler fires) against bare looplab/fsm and
//     qmuntal/stateless.
//
// The fixtures are the files in ../testdata/fixtures, written by
// go run ./internal/fixturegen from the repository root.
//
// Run everything and write results/ (raw output, benchstat, report.md):
//
//	bench/run                       # 6 rounds of -count 1: 15-20 minutes on 2 busy cores
//	COUNT=1 BENCHTIME=1x bench/run  # a quick check that nothing rotted
//
// scripts/bench (make bench) at the repository root runs bench/run together with the
// library's own benchmarks and writes REPORT.md from all of them, and the headline
// ratios of the repository's README.md.
//
// or a single family by hand:
//
//	cd bench && GOWORK=off go test -run '^$' -bench 'Diff/' -benchmem
package bench
