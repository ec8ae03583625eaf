package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

const sampleRaw = `command: COUNT=2 bench/run
go-version: go1.26.8
cpu-model: Test CPU
cores: 2
date: 2026-01-01T00:00:00Z
goos: linux
goarch: amd64
pkg: github.com/opbus/opbus/bench
cpu: Test CPU
BenchmarkDiff/pod/opbus-2         	    1000	     20000 ns/op	    1280 B/op	       7 allocs/op
BenchmarkDiff/pod/opbus-2         	    1000	     22000 ns/op	    1280 B/op	       7 allocs/op
BenchmarkDiff/pod/jsondiff-2      	    1000	     40000 ns/op	    3240 B/op	      26 allocs/op
BenchmarkDiff/pod/jsondiff-2      	    1000	     42000 ns/op	    3240 B/op	      26 allocs/op
BenchmarkDiff/pod/walk-2          	    1000	     10000 ns/op	       0 B/op	       0 allocs/op
BenchmarkDiff/pod/walk-2          	    1000	     10000 ns/op	       0 B/op	       0 allocs/op
BenchmarkDiff/pod-equal/opbus-2   	    1000	     30000 ns/op	       8 B/op	       1 allocs/op
BenchmarkDiff/pod-equal/opbus-2   	    1000	     30000 ns/op	       8 B/op	       1 allocs/op
BenchmarkDiff/pod-equal/jsondiff-2	    1000	     20000 ns/op	     352 B/op	       1 allocs/op
BenchmarkDiff/pod-equal/jsondiff-2	    1000	     20000 ns/op	     352 B/op	       1 allocs/op
BenchmarkDiff/pod-equal/walk-2    	    1000	     10000 ns/op	       0 B/op	       0 allocs/op
BenchmarkDiff/pod-equal/walk-2    	    1000	     10000 ns/op	       0 B/op	       0 allocs/op
BenchmarkDetect/pod/generation-predicate-2	 1000000	       600 ns/op	         1.000 real-change	         0 reports-change	       0 B/op	       0 allocs/op
BenchmarkDetect/pod/shell-operator-2      	  100000	     12000 ns/op	         1.000 real-change	         1.000 reports-change	    2768 B/op	      11 allocs/op
BenchmarkDetect/pod/walk-2                	  100000	      3000 ns/op	         1.000 real-change	         1.000 reports-change	       0 B/op	       0 allocs/op
PASS
`

func TestRender(t *testing.T) {
	res, err := parse(strings.NewReader(sampleRaw), "sample")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	renderSection(&buf, res)
	out := buf.String()
	for _, want := range []string{
		"Machine: go1.26.8, linux/amd64; CPU: Test CPU; 2 cores.",
		"Produced by `COUNT=2 bench/run`",
		// opbus: median 21 µs, half of jsondiff's 41 µs, 2.1× the 10 µs floor.
		"| pod | **opbus** | diff | 21.0 µs | ±∞ | 1.25 KiB | 7 | 1.00 | 2.10 |",
		"| pod | jsondiff | patch | 41.0 µs | ±∞ | 3.16 KiB | 26 | 1.95 | 4.10 |",
		"| pod | walk | bool | 10.0 µs | ±∞ | 0 B | 0 | – | 1.00 |",
		"| pod | 0.51× jsondiff | 2.10× | 7 | **missed**: more than 2× the floor |",
		"| pod-equal | 1.50× jsondiff | 3.00× | 1 | **missed**: slower than jsondiff, more than 2× the floor, allocates on equal inputs |",
		"| pod | generation-predicate | 600 ns | ±∞ | 0 B | 0 | – | 0.20 | no | **misses the change** |",
		"| pod | shell-operator | 12.0 µs | ±∞ | 2.70 KiB | 11 | 1.00 | 4.00 | yes | correct |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q; got:\n%s", want, out)
		}
	}
}

func TestParseRejectsEmpty(t *testing.T) {
	if _, err := parse(strings.NewReader("PASS\n"), "empty"); err == nil {
		t.Error("got no error for output without results")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{fmtTime(892e-9), "892 ns"},
		{fmtTime(47.79e-6), "47.8 µs"},
		{fmtTime(1.023e-3), "1.02 ms"},
		{fmtTime(1.84), "1.84 s"},
		{fmtBytes(432), "432 B"},
		{fmtBytes(1280), "1.25 KiB"},
		{fmtBytes(41557592), "39.6 MiB"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

const sampleLib = `goos: linux
goarch: amd64
pkg: github.com/opbus/opbus
BenchmarkCompare/pod/floor-2          	 100	     10000 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/pod/Compare-2        	 100	     25000 ns/op	    1280 B/op	       7 allocs/op
BenchmarkCompare/pod-equal/Compare-2  	 100	     12000 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/big/floor-2          	 100	    900000 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/big/Compare-2        	 100	   1000000 ns/op	     432 B/op	       2 allocs/op
BenchmarkDispatch/dispatch-2          	 100	     50000 ns/op	    8000 B/op	     100 allocs/op
BenchmarkDispatch/compare-2           	 100	     20000 ns/op	    1400 B/op	       8 allocs/op
BenchmarkMemoryPerKey-2               	   1	 4000000000 ns/op	      1100 B/key
pkg: github.com/opbus/opbus/fsm
BenchmarkTransition/impl=opbus-2      	1000	      1200 ns/op	     300 B/op	       5 allocs/op
BenchmarkTransition/impl=looplab-2    	1000	      1000 ns/op	     289 B/op	       5 allocs/op
`

const samplePeers = `pkg: github.com/opbus/opbus/bench
BenchmarkFSM/toggle/opbus-bus-fire-2   	1000	     12000 ns/op	    3000 B/op	      49 allocs/op
BenchmarkFSM/toggle/opbus-bus-nofire-2 	1000	      9000 ns/op	    2000 B/op	      33 allocs/op
BenchmarkFSM/toggle/looplab-2          	1000	      1000 ns/op	     289 B/op	       5 allocs/op
BenchmarkDiffBytes/pod/opbus-2         	1000	    500000 ns/op
BenchmarkDiffBytes/pod/json-patch-merge-2	1000	    300000 ns/op
BenchmarkDiffBytes/pod/walk-2          	1000	    400000 ns/op
BenchmarkDispatch/pod-10k/opbus-2      	1000	     30000 ns/op	     2.6 calls/update	 33333 updates/s	    8000 B/op	     100 allocs/op
BenchmarkDispatch/pod-10k/workqueue-predicate-2	1000	     60000 ns/op	     2.6 calls/update	 16667 updates/s	   10000 B/op	     470 allocs/op
`

const sampleCharm = "# charm\n\n" +
	"| before | tool calls | hook ms | tools ms | overhead ms |\n" +
	"|---|---|---|---|---|\n" +
	"| update-status | 8 | 75.4 | 62.3 | **99.0** |\n\n" +
	"| after | tool calls | hook ms | tools ms | overhead ms |\n" +
	"|---|---|---|---|---|\n" +
	"| start-up | 0 | 6.4 | – | 6.4 |\n" +
	"| update-status | 8 | 75.4 (70.1–80.0) | 62.3 | **13.4** (1.7–13.9) |\n" +
	"| config-changed | 9 | 70.0 | 62.0 | **8.0** |\n\n" +
	"| other | tool calls | overhead ms |\n|---|---|---|\n| later table | 3 | 1.0 |\n"

func TestTargets(t *testing.T) {
	lib, err := parse(strings.NewReader(sampleLib), "lib")
	if err != nil {
		t.Fatal(err)
	}
	peers, err := parse(strings.NewReader(samplePeers), "peers")
	if err != nil {
		t.Fatal(err)
	}
	ts := targets(lib, peers, &external{charm: sampleCharm})
	for _, tc := range []struct {
		name           string
		what, verdict  string
		figureContains string
	}{
		{nameDiffFloor, "within 2× of the equality-walk floor on pod", "missed", "2.50×"},
		{nameDiffFloor, "within 2× of the equality-walk floor on big", "met", "1.11×"},
		{nameDiffAllocs, "allocates nothing on equal inputs", "met", "0 allocs/op"},
		{nameDiffAllocs, "grow with the number of changes", "met", "big (~200 KB, 1 change): 2"},
		{nameDispatchCost, "≤ 3× one `Compare`", "met", "2.50×"},
		{nameBookkeeping, "≤ 1 KiB per key", "missed", "1100 B/key"},
		{nameFSM, "without the bus", "met", "1.20×"},
		{nameFSM, "through the public API", "missed", "12.00×"},
		{nameFSM, "the machine's share", "–", "3.00× looplab"},
		{nameK8s, "watch latency", "not measured", "does not exist"},
		{nameHook, "Juju hook", "missed", "update-status: 13.4 ms; config-changed: 8.0 ms"},
		{nameThroughput, "dispatch throughput", "met", "2.00× (33,333 vs 16,667 updates/s)"},
		{nameDiffPeers, "`Compare` faster than every full-diff peer and within 2× of the floor (decoded)", "not measured", "not run"},
		{nameDiffPeers, "pod (from JSON bytes", "missed", "1.67× json-patch-merge; 1.25× the floor — slower than json-patch-merge, which decodes with its own JSON decoder and itself takes 0.75× the floor"},
	} {
		found := false
		for _, got := range ts {
			if got.name != tc.name || !strings.Contains(got.what, tc.what) {
				continue
			}
			found = true
			if got.verdict != tc.verdict || !strings.Contains(got.figure, tc.figureContains) {
				t.Errorf("%s %q: got %s, %q; want %s, a figure with %q", tc.name, tc.what, got.verdict, got.figure, tc.verdict, tc.figureContains)
			}
		}
		if !found {
			t.Errorf("%s: no target %q", tc.name, tc.what)
		}
	}

	var buf bytes.Buffer
	missedProfiles(&buf, ts)
	want := "compare-pod\t.\t.\t^BenchmarkCompare$/^pod$/^Compare$\t\n" +
		"fsm-bus-fire\tbench\t.\t^BenchmarkFSM$/^toggle$/^opbus-bus-fire$\t\n" +
		"diffbytes-pod\tbench\t.\t^BenchmarkDiffBytes$/^pod$/^opbus$\t\n"
	if got := buf.String(); got != want {
		t.Errorf("missed profiles:\ngot  %q\nwant %q", got, want)
	}
}

func TestVerdicts(t *testing.T) {
	doc := "# Head: target\n\nTarget: p99 under 50 ms. **Met** when\nslow. **Missed** when fast. Other.\n\n" +
		"```\ntarget in code\n```\n| what | per object |\n|---|---|\n| bookkeeping | 800 B — target < 1 KiB: **met** |\n"
	got := verdicts(doc, 6)
	want := []string{"Target: p99 under 50 ms.", "**Met** when slow.", "**Missed** when fast.", "bookkeeping: 800 B — target < 1 KiB: **met**"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, tc := range []struct {
		said []string
		want string
	}{
		{want, "missed"},
		{want[3:], "met"},
		{want[:1], ""},
	} {
		if got := overall(tc.said); got != tc.want {
			t.Errorf("overall(%q) = %q, want %q", tc.said, got, tc.want)
		}
	}
}

func TestRenderDoc(t *testing.T) {
	lib, err := parse(strings.NewReader(sampleLib), "lib")
	if err != nil {
		t.Fatal(err)
	}
	peers, err := parse(strings.NewReader(samplePeers), "peers")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	renderDoc(&buf, docInput{peers: peers, lib: lib, ext: &external{charm: sampleCharm},
		machine:  map[string]string{"count": "3", "benchtime": "1s", "count-reason": "time", "cores": "2"},
		commands: "scripts/bench"})
	out := buf.String()
	for _, want := range []string{
		"**Fewer runs than the 6 the targets are judged on** (time)",
		"```sh\nscripts/bench\n```",
		"| dispatch throughput | dispatch throughput",
		"| pod-10k | **opbus** | handler calls | 30.0 µs | ±∞ | 7.81 KiB | 100 | 33,333 | 2.60 | 1.00 | – |",
		"| toggle | **opbus-bus-nofire** | none | 9.00 µs | ±∞ | 1.95 KiB | 33 | – | – |",
		"| `Compare/pod/Compare` | 25.0 µs | ±∞ | 1.25 KiB | 7 | 2.50 |",
		"| `MemoryPerKey` | 4.00 s | ±∞ | – | – | 1100 B |",
		"| `Transition/impl=opbus` | 1.20 µs | ±∞ | 300 B | 5 | 1.20 |",
		"- Juju hooks: the cost of a hook against the fake hook tools: [examples/charm/BENCHMARKS.md](../examples/charm/BENCHMARKS.md).",
		"- Kubernetes: watch latency and memory per object against a real API server: not measured yet (`adapters/k8s/BENCHMARKS.md` does not exist).",
		"| an update through 20 field-subscribed handlers, 10,000 Pods (`BenchmarkDispatch`) | client-go's workqueue fed by controller-runtime predicates | 30.0 µs | 60.0 µs | 0.50× |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("document lacks %q; got:\n%s", want, out)
		}
	}
	// The adapters' documents are linked, not copied, and no target is named by a
	// tracker's number.
	for _, unwanted := range []string{"### charm", "issue"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("document has %q; got:\n%s", unwanted, out)
		}
	}
}
