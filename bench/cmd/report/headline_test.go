package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestReadmeHeadlines: the headline table of README.md is the one the recorded
// run (bench/results) gives, so it cannot drift from the figures it cites;
// scripts/bench rewrites it with each run.
func TestReadmeHeadlines(t *testing.T) {
	peers, err := parseFile("../../results/raw.txt")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := parseFile("../../results/lib.txt")
	if err != nil {
		t.Fatal(err)
	}
	machine, err := readConfig("../../results/machine.txt")
	if err != nil {
		t.Fatal(err)
	}
	hs := headlines(lib, peers)
	if len(hs) != 6 {
		t.Errorf("the recorded run gives %d headline ratios, want 6: %+v", len(hs), hs)
	}
	var want bytes.Buffer
	renderRun(&want, machine)
	renderHeadlines(&want, hs)
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	spliced, err := spliceHeadlines(readme, want.String(), "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if spliced != readme {
		t.Errorf("README.md's headline table is not the recorded run's; rewrite it with\n"+
			"  (cd bench && go run ./cmd/report -headline -raw results/raw.txt -lib results/lib.txt -machine results/machine.txt -readme ../README.md)\nwant:\n%s", want.String())
	}
}

func TestSpliceHeadlines(t *testing.T) {
	doc := "# x\n\n" + headlineStart + "\nold table\n" + headlineEnd + "\ntail\n"
	got, err := spliceHeadlines(doc, "| new |\n", "x.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# x\n\n" + headlineStart + "\n| new |\n" + headlineEnd + "\ntail\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = spliceHeadlines("# x\n"+headlineEnd+"\n", "| new |\n", "x.md")
	if err == nil || !strings.Contains(err.Error(), "x.md") || !strings.Contains(err.Error(), headlineStart) {
		t.Errorf("a missing start marker: got %v, want an error naming x.md and the marker", err)
	}
}

func TestHeadlines(t *testing.T) {
	lib, err := parse(strings.NewReader(sampleLib), "lib")
	if err != nil {
		t.Fatal(err)
	}
	peers, err := parse(strings.NewReader(samplePeers), "peers")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	renderHeadlines(&buf, headlines(lib, peers))
	for _, want := range []string{
		"| opbus's work | measured against | opbus | other | opbus ÷ other |",
		"| `bus.Dispatch` of one update to 20 handlers (root `BenchmarkDispatch`) | one `Compare` of the same pair | 50.0 µs | 20.0 µs | 2.50× |",
		"| a state-machine transition without the bus (fsm `BenchmarkTransition`) | bare looplab/fsm | 1.20 µs | 1.00 µs | 1.20× |",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("headlines lack %q; got:\n%s", want, buf.String())
		}
	}
}
