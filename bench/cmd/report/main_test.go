package main

import (
	"bytes"
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
	if err := render(&buf, res); err != nil {
		t.Fatal(err)
	}
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
