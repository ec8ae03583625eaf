package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/opbus/opbus/bench"
)

// A section describes one family of the bench module.
type section struct {
	family, title, intro string
	peers                []bench.Peer
	floor                string   // the entry "× floor" divides by
	extra                []string // units shown besides time, B/op and allocs/op
}

var sections = []section{
	{"Diff", "Structural diff from decoded objects (`BenchmarkDiff`)",
		"Both objects are already decoded the way client-go decodes them (integers as int64). pod: one container goes running → terminated; pod-equal: two separately decoded copies of the same Pod; big: ~200 KB, one leaf changed; deep: maps 30 deep, one leaf changed at the bottom.",
		bench.DiffPeers, bench.Floor, nil},
	{"DiffBytes", "Structural diff from JSON bytes (`BenchmarkDiffBytes`)",
		"The same, starting from the compact JSON of both sides (watch events arrive as bytes): decoding is timed. opbus uses `jsoncompare.Compare`, which compares the texts without decoding them.",
		bench.DiffPeers, bench.Floor, nil},
	{"Detect", "Change detection per subscription (`BenchmarkDetect`)",
		"Does `status.containerStatuses` differ between the previous and the new Pod (as `*unstructured.Unstructured`)? " +
			"pod: the kubelet's write, container app terminated (the field changed); pod-annotated: the library's own bookkeeping write (it did not). " +
			"What an approach keeps between events (shell-operator's cached checksum, the bus's digests) is set up outside the timed loop. " +
			"**× fastest** divides by the fastest approach that answers correctly on every fixture.",
		bench.Detectors, bench.Floor, nil},
	{"Dispatch", "Observed updates per second through handlers (`BenchmarkDispatch`)",
		"10,000 Pods (the fixture Pod, names varied) and 20 handlers, each subscribed to a different field, with empty bodies. " +
			"The stream cycles through 10 versions of each Pod: each update switches one of five edits on or off, so it changes two fields " +
			"(container app terminates and the Ready condition goes False; a label and an annotation; the app image and a toleration; podIP and hostIP; phase and startTime) " +
			"and bumps metadata.resourceVersion. Versions of one Pod share no maps, so no comparison can take a same-pointer shortcut. " +
			"Feeder goroutines, one per CPU, deliver a round of updates (one per Pod) and the round ends when every handler call it caused has returned, " +
			"so neither side coalesces updates and both make every call. One op is one update: time/op is the time per update; " +
			"calls/update counts handler calls (2.6 per update over whole cycles, the same for every entry; runs that stop mid-cycle differ a little).",
		bench.DispatchPeers, bench.Floor, []string{"updates/s", "calls/update"}},
	{"FSM", "State-machine transitions (`BenchmarkFSM`)",
		"One transition per op, alternating a → b and b → a. opbus's fsm fires only from inside a handler (Machine.Fire takes the event being handled), " +
			"so its public path is a bus.Dispatch whose handler fires; the machine's own work without the bus is measured by the fsm package's benchmark (below, with the library's benchmarks).",
		bench.FSMPeers, bench.FSMFloor, nil},
}

// renderBench writes the tables of the bench module's families.
func renderBench(w io.Writer, r *run, heading string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	for _, s := range sections {
		fam := r.family(s.family)
		if fam == nil {
			continue
		}
		p("%s %s\n\n%s\n\n", heading, s.title, s.intro)
		if s.family == "Detect" {
			renderDetectTable(w, fam)
			continue
		}
		renderPeerTable(w, fam, s)
		if s.family == "Diff" {
			renderCompareTargets(w, fam)
		}
	}
}

func renderPeerTable(w io.Writer, fam *family, s section) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	timeCol := "time/op"
	if s.family == "Dispatch" {
		timeCol = "time/update"
	}
	p("| fixture | entry | returns | %s | ± | B/op | allocs/op |", timeCol)
	for _, u := range s.extra {
		p(" %s |", u)
	}
	p(" × fastest | × floor |\n|---|---|---|--:|--:|--:|--:|%s--:|--:|\n", strings.Repeat("--:|", len(s.extra)))
	for _, fx := range fam.fixtures {
		_, fastT := fam.fastest(fx, func(e string) bool { return !info(s.peers, e).Baseline })
		floorT, haveFloor := fam.median(fx, s.floor, "sec/op")
		for _, e := range fam.entries {
			t, pct, ok := fam.summary(fx, e, "sec/op")
			if !ok {
				continue
			}
			p("| %s | %s | %s | %s | %s | %s | %s |", fx, bold(e), info(s.peers, e).Returns,
				fmtTime(t), pct, fmtUnit(fam, fx, e, "B/op"), fmtUnit(fam, fx, e, "allocs/op"))
			for _, u := range s.extra {
				p(" %s |", fmtUnit(fam, fx, e, u))
			}
			p(" %s | %s |\n", ratio(t, fastT, !info(s.peers, e).Baseline), ratio(t, floorT, haveFloor))
		}
	}
	p("\n")
	renderNotes(w, fam, s.peers)
}

func renderNotes(w io.Writer, fam *family, peers []bench.Peer) {
	for _, e := range fam.entries {
		if n := info(peers, e).Note; n != "" {
			fmt.Fprintf(w, "- `%s`: %s\n", e, n)
		}
	}
	fmt.Fprintf(w, "\n")
}

// bold marks opbus's own entries.
func bold(e string) string {
	if e == bench.Opbus || strings.HasPrefix(e, bench.Opbus+"-") {
		return "**" + e + "**"
	}
	return e
}

func info(peers []bench.Peer, name string) bench.Peer {
	for _, p := range peers {
		if p.Name == name {
			return p
		}
	}
	return bench.Peer{Name: name}
}

// renderCompareTargets states plainly whether Compare meets its targets (diff vs peers,
// diff vs equality walk, diff allocations) on each fixture: faster than every peer that
// produces a full diff, within 2× of the floor, no allocation on equal inputs.
func renderCompareTargets(w io.Writer, fam *family) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("**Targets for `opbus.Compare`** (from decoded objects):\n\n")
	p("| fixture | vs fastest full-diff peer | within 2× of the floor | allocs/op | verdict |\n")
	p("|---|---|---|--:|---|\n")
	for _, fx := range fam.fixtures {
		c, ok := compareVerdict(fam, fx, true)
		if !ok {
			continue
		}
		verdict := "met"
		if len(c.missed) > 0 {
			verdict = "**missed**: " + strings.Join(c.missed, ", ")
		}
		p("| %s | %s | %s | %s | %s |\n", fx, c.vsPeer, c.vsFloor, fmtCount(c.allocs), verdict)
	}
	p("\n")
}

// compare is Compare's standing on one fixture of the diff family.
type compare struct {
	vsPeer, vsFloor string
	peerVsFloor     string // the fastest full-diff peer's time over the floor's
	allocs          float64
	slower, far     bool // than the fastest full-diff peer; more than 2× the floor
	allocates       bool // on equal inputs
	missed          []string
}

// compareVerdict tells where Compare stands on fixture fx. allocs says whether to hold
// it to allocating nothing on equal inputs, which only makes sense without decoding.
func compareVerdict(fam *family, fx string, allocs bool) (compare, bool) {
	var c compare
	t, ok := fam.median(fx, bench.Opbus, "sec/op")
	if !ok {
		return c, false
	}
	peer, peerT := fam.fastest(fx, func(e string) bool {
		i := info(bench.DiffPeers, e)
		return e != bench.Opbus && i.FullDiff && !i.Baseline
	})
	c.vsPeer = "no peer ran"
	if peer != "" {
		c.vsPeer = fmt.Sprintf("%.2f× %s", t/peerT, peer)
		if c.slower = t >= peerT; c.slower {
			c.missed = append(c.missed, "slower than "+peer)
		}
	}
	c.vsFloor, c.peerVsFloor = "no floor", "?"
	if floorT, ok := fam.median(fx, bench.Floor, "sec/op"); ok {
		c.vsFloor = fmt.Sprintf("%.2f×", t/floorT)
		if peer != "" {
			c.peerVsFloor = fmt.Sprintf("%.2f×", peerT/floorT)
		}
		if c.far = t > 2*floorT; c.far {
			c.missed = append(c.missed, "more than 2× the floor")
		}
	}
	c.allocs, _ = fam.median(fx, bench.Opbus, "allocs/op")
	if c.allocates = allocs && fx == "pod-equal" && c.allocs != 0; c.allocates {
		c.missed = append(c.missed, "allocates on equal inputs")
	}
	return c, true
}

func renderDetectTable(w io.Writer, fam *family) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	// An approach is correct on a fixture when what it reports is what happened.
	correct := func(fx, e string) bool {
		got, ok1 := fam.median(fx, e, "reports-change")
		want, ok2 := fam.median(fx, e, "real-change")
		return ok1 && ok2 && got == want
	}
	alwaysCorrect := func(e string) bool {
		if info(bench.Detectors, e).Baseline {
			return false
		}
		for _, fx := range fam.fixtures {
			if !correct(fx, e) {
				return false
			}
		}
		return true
	}
	p("| fixture | approach | time/op | ± | B/op | allocs/op | × fastest | × floor | reports a change | verdict |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|---|---|\n")
	for _, fx := range fam.fixtures {
		_, fastT := fam.fastest(fx, alwaysCorrect)
		floorT, haveFloor := fam.median(fx, bench.Floor, "sec/op")
		for _, e := range fam.entries {
			t, pct, ok := fam.summary(fx, e, "sec/op")
			if !ok {
				continue
			}
			got, _ := fam.median(fx, e, "reports-change")
			want, _ := fam.median(fx, e, "real-change")
			verdict := "correct"
			switch {
			case got == want:
			case want == 1:
				verdict = "**misses the change**"
			default:
				verdict = "**false alarm**"
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", fx, bold(e),
				fmtTime(t), pct, fmtUnit(fam, fx, e, "B/op"), fmtUnit(fam, fx, e, "allocs/op"),
				ratio(t, fastT, alwaysCorrect(e)), ratio(t, floorT, haveFloor), yesNo(got == 1), verdict)
		}
	}
	p("\n")
	renderNotes(w, fam, bench.Detectors)
}

// A libTable describes one benchmark of the library's own modules (the root package
// and fsm/), whose sub-benchmarks are listed as rows.
type libTable struct {
	pkg, bench, title, intro string
	// ref names the row each row's time is divided by, from the row's name below
	// bench ("pod/Compare" → "pod/floor"); "" for none.
	ref      func(row string) string
	refLabel string
}

var libTables = []libTable{
	{"github.com/opbus/opbus", "Compare", "`opbus.Compare` (root `BenchmarkCompare`)",
		"The diff fixtures decoded by encoding/json (float64 numbers). `floor` is the root package's own equality walk; `Comparer-k8s` ignores the per-write noise and keys Kubernetes lists, as the bus does.",
		func(row string) string { fx, _, _ := strings.Cut(row, "/"); return fx + "/floor" }, "× floor"},
	{"github.com/opbus/opbus", "Dispatch", "Dispatch overhead (root `BenchmarkDispatch`)",
		"`bus.Dispatch` of the Pod fixture, alternating running ↔ terminated, with 20 handlers on different fields (empty bodies, in-memory store), against one `Compare` of the same pair with the bus's settings; `dispatch-unchanged` dispatches the same state again.",
		func(string) string { return "compare" }, "× compare"},
	{"github.com/opbus/opbus", "MemoryPerKey", "Bookkeeping per object (root `BenchmarkMemoryPerKey`)",
		"Heap growth per key after dispatching 100,000 small objects to 10 field subscriptions, beyond the objects themselves (`B/key`).",
		nil, ""},
	{"github.com/opbus/opbus", "Related", "A related object's change (root `BenchmarkRelated`)",
		"A WebApp with 1 or 1,000 Deployments and a handler on `related.Deployment[*].status.readyReplicas` (empty body, in-memory store): one Deployment's readiness flips, `bus.Dispatch` of it and then of the WebApp's unchanged state, which runs the handler.",
		func(string) string { return "children=1" }, "× one"},
	{"github.com/opbus/opbus", "MemoryPerRelation", "Bookkeeping per relation (root `BenchmarkMemoryPerRelation`)",
		"Heap growth per WebApp–Deployment pair after dispatching 10,000 pairs, with the relation and a handler reading the Deployment's readiness, or without (a handler on the WebApp's spec), beyond the objects themselves (`B/pair`).",
		nil, ""},
	{"github.com/opbus/opbus", "Digest", "Digest hash (root `BenchmarkDigest`)",
		"The canonical encoding of the Pod plus SHA-256, against SHA-256 and FNV-1a alone over the same bytes.",
		nil, ""},
	{"github.com/opbus/opbus/fsm", "Transition", "fsm transitions without the bus (`fsm` `BenchmarkTransition`)",
		"`impl=opbus` is Machine.Fire's work for one object (restore the state from the record, looplab's transition, record the state, set the slot) on an in-memory record instead of a dispatch, through an unexported entry point; `impl=opbus/dispatch` is the same through `bus.Dispatch`; `guarded` variants add a guard (opbus) or a before_event callback (looplab).",
		func(row string) string {
			if strings.HasSuffix(row, "/guarded") {
				return "impl=looplab/guarded"
			}
			return "impl=looplab"
		}, "× looplab"},
}

// renderLib writes the tables of the library's own benchmarks, in libTables order and
// then any benchmark no table describes.
func renderLib(w io.Writer, r *run, heading string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	done := map[string]bool{}
	var tables []libTable
	for _, t := range libTables {
		if len(r.under(t.bench)) > 0 {
			tables = append(tables, t)
		}
	}
	for _, n := range r.names {
		top, _, _ := strings.Cut(n, "/")
		known := false
		for _, t := range tables {
			known = known || t.bench == top
		}
		if !known {
			tables = append(tables, libTable{pkg: r.pkg[n], bench: top, title: "`Benchmark" + top + "`"})
		}
	}
	for _, t := range tables {
		if done[t.bench] {
			continue
		}
		done[t.bench] = true
		p("%s %s\n\n", heading, t.title)
		if t.intro != "" {
			p("%s\n\n", t.intro)
		}
		rows := r.under(t.bench)
		var extra []string
		for _, n := range rows {
			for _, u := range r.units[n] {
				switch u {
				case "sec/op", "B/op", "allocs/op":
				default:
					if !slices.Contains(extra, u) {
						extra = append(extra, u)
					}
				}
			}
		}
		p("| benchmark | time/op | ± | B/op | allocs/op |")
		for _, u := range extra {
			p(" %s |", unitLabel(u))
		}
		if t.ref != nil {
			p(" %s |", t.refLabel)
		}
		p("\n|---|--:|--:|--:|--:|%s", strings.Repeat("--:|", len(extra)))
		if t.ref != nil {
			p("--:|")
		}
		p("\n")
		for _, n := range rows {
			row := strings.TrimPrefix(strings.TrimPrefix(n, t.bench), "/")
			label := "`" + n + "`"
			tm, pct, _ := r.summary(n, "sec/op")
			p("| %s | %s | %s | %s | %s |", label, fmtTime(tm), pct, fmtRun(r, n, "B/op"), fmtRun(r, n, "allocs/op"))
			for _, u := range extra {
				p(" %s |", fmtRun(r, n, u))
			}
			if t.ref != nil {
				base, ok := r.median(t.bench+"/"+t.ref(row), "sec/op")
				p(" %s |", ratio(tm, base, ok))
			}
			p("\n")
		}
		p("\n")
	}
}

func unitLabel(u string) string {
	if u == "B/s" {
		return "MB/s"
	}
	return u
}

func fmtUnit(fam *family, fx, e, unit string) string {
	return fmtRun(fam.r, fam.name+"/"+fx+"/"+e, unit)
}

// fmtRun formats the median of a unit of a benchmark, or "–" if it was not measured.
func fmtRun(r *run, name, unit string) string {
	v, ok := r.median(name, unit)
	if !ok {
		return "–"
	}
	return fmtValue(unit, v)
}

func fmtValue(unit string, v float64) string {
	switch {
	case strings.HasPrefix(unit, "sec/"):
		return fmtTime(v)
	case unit == "B/key":
		return fmt.Sprintf("%.0f B", v) // exact: its target is 1 KiB
	case unit == "B/s":
		return sig3(v / 1e6)
	case strings.HasPrefix(unit, "B/"):
		return fmtBytes(v)
	case unit == "allocs/op":
		return fmtCount(v)
	case unit == "updates/s":
		return fmtThousands(v)
	}
	return sig3(v)
}

func ratio(t, base float64, show bool) string {
	if !show || base == 0 || math.IsInf(base, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", t/base)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// fmtTime formats seconds with three significant digits in ns, µs, ms or s.
func fmtTime(sec float64) string {
	ns := sec * 1e9
	switch {
	case ns < 1e3:
		return sig3(ns) + " ns"
	case ns < 1e6:
		return sig3(ns/1e3) + " µs"
	case ns < 1e9:
		return sig3(ns/1e6) + " ms"
	}
	return sig3(ns/1e9) + " s"
}

func fmtBytes(b float64) string {
	switch {
	case b < 1024:
		return fmt.Sprintf("%.0f B", b)
	case b < 1024*1024:
		return sig3(b/1024) + " KiB"
	}
	return sig3(b/(1024*1024)) + " MiB"
}

func fmtCount(n float64) string { return fmt.Sprintf("%.0f", n) }

// fmtThousands formats a rate as a whole number with thousands separators.
func fmtThousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
