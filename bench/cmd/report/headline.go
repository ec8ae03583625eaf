package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opbus/opbus/bench"
)

// A headline is one ratio of the recorded run that README.md shows: opbus's time
// against another's on the same work, measured in the same run.
type headline struct {
	what    string // the work measured
	against string // what opbus is measured against
	ratio   float64
	opbus   string // opbus's figure
	other   string // the other's figure
}

// headlines returns the headline ratios that lib (the root package and fsm/) and peers
// (the bench module) hold; a ratio whose benchmarks did not run is left out.
// fullDiffPeer reports whether entry e of the diff families is a peer
// that computes a full diff (not opbus, not a yardstick).
func fullDiffPeer(e string) bool {
	i := info(bench.DiffPeers, e)
	return e != bench.Opbus && i.FullDiff && !i.Baseline
}

func headlines(lib, peers *run) []headline {
	var hs []headline
	if fam := peers.family("Diff"); fam != nil {
		if t, ok := fam.median("pod", bench.Opbus, "sec/op"); ok {
			peer, peerT := fam.fastest("pod", fullDiffPeer)
			if peer != "" {
				hs = append(hs, headline{"diff of a Pod whose container died (decoded objects, `BenchmarkDiff`)",
					"the fastest full-diff peer, " + peer, t / peerT, fmtTime(t), fmtTime(peerT)})
			}
			if f, ok := fam.median("pod", bench.Floor, "sec/op"); ok {
				hs = append(hs, headline{"the same diff", "`walk`, an equality walk over both trees that records nothing (the floor of `BenchmarkDiff`)",
					t / f, fmtTime(t), fmtTime(f)})
			}
		}
	}
	if fam := peers.family("DiffBytes"); fam != nil {
		if t, ok := fam.median("pod", bench.Opbus, "sec/op"); ok {
			peer, peerT := fam.fastest("pod", fullDiffPeer)
			if peer != "" {
				hs = append(hs, headline{"the same diff from the Pods' JSON bytes (`jsoncompare.Compare`, `BenchmarkDiffBytes`)",
					"the fastest full-diff peer from bytes, " + peer, t / peerT, fmtTime(t), fmtTime(peerT)})
			}
		}
	}
	bus, ok1 := peers.median("Dispatch/pod-10k/opbus", "sec/op")
	wq, ok2 := peers.median("Dispatch/pod-10k/workqueue-predicate", "sec/op")
	if ok1 && ok2 {
		hs = append(hs, headline{"an update through 20 field-subscribed handlers, 10,000 Pods (`BenchmarkDispatch`)",
			"client-go's workqueue fed by controller-runtime predicates", bus / wq, fmtTime(bus), fmtTime(wq)})
	}
	d, ok1 := lib.median("Dispatch/dispatch", "sec/op")
	c, ok2 := lib.median("Dispatch/compare", "sec/op")
	if ok1 && ok2 {
		hs = append(hs, headline{"`bus.Dispatch` of one update to 20 handlers (root `BenchmarkDispatch`)",
			"one `Compare` of the same pair", d / c, fmtTime(d), fmtTime(c)})
	}
	o, ok1 := lib.median("Transition/impl=opbus", "sec/op")
	l, ok2 := lib.median("Transition/impl=looplab", "sec/op")
	if ok1 && ok2 {
		hs = append(hs, headline{"a state-machine transition without the bus (fsm `BenchmarkTransition`)",
			"bare looplab/fsm", o / l, fmtTime(o), fmtTime(l)})
	}
	return hs
}

// renderHeadlines writes the headline ratios as a Markdown table.
func renderHeadlines(w io.Writer, hs []headline) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("| opbus's work | measured against | opbus | other | opbus ÷ other |\n|---|---|--:|--:|--:|\n")
	for _, h := range hs {
		p("| %s | %s | %s | %s | %.2f× |\n", h.what, h.against, h.opbus, h.other, h.ratio)
	}
}

// The markers around the headline table in README.md.
const (
	headlineStart = "<!-- headline ratios: written by scripts/bench (bench/cmd/report -headline) -->"
	headlineEnd   = "<!-- end of headline ratios -->"
)

// spliceHeadlines returns doc with the text between the headline markers replaced by
// table; file names doc in the error if a marker is missing.
func spliceHeadlines(doc, table, file string) (string, error) {
	i := strings.Index(doc, headlineStart)
	j := strings.Index(doc, headlineEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("%s: want the line %q, then the table, then %q", file, headlineStart, headlineEnd)
	}
	i += len(headlineStart)
	return doc[:i] + "\n" + table + doc[j:], nil
}

// renderRun says which run the headline ratios come from, from the machine file's
// lines (nothing if there are none).
func renderRun(w io.Writer, machine map[string]string) {
	if machine["started"] == "" {
		return
	}
	fmt.Fprintf(w, "The run of %s by `make bench` (`scripts/bench`): %s, %s cores, %s rounds of `-count 1`, `-benchtime %s`.\n\n",
		machine["started"], orUnknown(machine["go-version"]), orUnknown(machine["cores"]), orUnknown(machine["count"]), orUnknown(machine["benchtime"]))
}

// writeHeadlines replaces the headline table of the Markdown file readme.
func writeHeadlines(readme string, machine map[string]string, hs []headline) error {
	b, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	var table bytes.Buffer
	renderRun(&table, machine)
	renderHeadlines(&table, hs)
	doc, err := spliceHeadlines(string(b), table.String(), readme)
	if err != nil {
		return err
	}
	return os.WriteFile(readme, []byte(doc), 0o644)
}
