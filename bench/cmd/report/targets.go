package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A target is one performance target of the library, with what this run measured.
type target struct {
	name    string // what it measures, in a few words: "dispatch throughput"
	what    string // the target itself
	figure  string // what was measured
	verdict string // "met", "missed", "not measured", or "–" for figures given for orientation
	profile *profile
}

func (t target) missed() bool { return t.verdict == "missed" }

// A profile says which benchmark to profile for a missed target.
type profile struct {
	id     string // names the profile's files
	module string // the module's directory, relative to the repository root
	pkg    string // the package, relative to the module
	bench  string // the -bench regexp
	// focus, if set, limits the report to samples with a function matching it on the
	// stack (go tool pprof -focus), for a -bench regexp that cannot leave out nested
	// sub-benchmarks.
	focus string
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// Names of the targets: each says what its benchmarks measure.
const (
	nameDiffFloor    = "diff vs equality walk"
	nameDiffAllocs   = "diff allocations"
	nameDiffPeers    = "diff vs peers"
	nameDispatchCost = "dispatch overhead"
	nameBookkeeping  = "bookkeeping per key"
	nameFSM          = "fsm transition"
	nameK8s          = "Kubernetes watch latency and memory"
	nameHook         = "Juju hook overhead"
	nameThroughput   = "dispatch throughput"
	nameRelated      = "related objects"
)

// targets lists the library's performance targets with this run's figures: lib is the
// library's own benchmarks (root and fsm), peers the bench module's, ext the documents
// of the adapters.
func targets(lib, peers *run, ext *external) []target {
	var ts []target
	add := func(t target) { ts = append(ts, t) }
	notRun := func(name, what, bench string) {
		add(target{name: name, what: what, figure: bench + " was not run", verdict: "not measured"})
	}

	// Compare against the equality walk, and its allocations.
	for _, fx := range []string{"pod", "big"} {
		what := fmt.Sprintf("`Compare` within 2× of the equality-walk floor on %s", fx)
		t, ok1 := lib.median("Compare/"+fx+"/Compare", "sec/op")
		f, ok2 := lib.median("Compare/"+fx+"/floor", "sec/op")
		if !ok1 || !ok2 {
			notRun(nameDiffFloor, what, "root BenchmarkCompare")
			continue
		}
		add(target{name: nameDiffFloor, what: what,
			figure:  fmt.Sprintf("%.2f× (%s vs %s)", t/f, fmtTime(t), fmtTime(f)),
			verdict: verdict(t <= 2*f),
			profile: &profile{"compare-" + fx, ".", ".", "^BenchmarkCompare$/^" + fx + "$/^Compare$", ""}})
	}
	if a, ok := lib.median("Compare/pod-equal/Compare", "allocs/op"); ok {
		add(target{name: nameDiffAllocs, what: "`Compare` allocates nothing on equal inputs (pod-equal)",
			figure: fmt.Sprintf("%s allocs/op", fmtCount(a)), verdict: verdict(a == 0)})
	} else {
		notRun(nameDiffAllocs, "`Compare` allocates nothing on equal inputs", "root BenchmarkCompare")
	}
	podA, ok1 := lib.median("Compare/pod/Compare", "allocs/op")
	bigA, ok2 := lib.median("Compare/big/Compare", "allocs/op")
	if ok1 && ok2 {
		add(target{name: nameDiffAllocs, what: "`Compare`'s allocations grow with the number of changes, not with object size",
			figure:  fmt.Sprintf("pod (~11 KB, 4 changes): %s allocs/op; big (~200 KB, 1 change): %s", fmtCount(podA), fmtCount(bigA)),
			verdict: verdict(bigA <= podA)})
	}

	// Dispatch overhead and bookkeeping.
	d, ok1 := lib.median("Dispatch/dispatch", "sec/op")
	c, ok2 := lib.median("Dispatch/compare", "sec/op")
	if what := "dispatch overhead per update, 20 handlers, empty bodies, ≤ 3× one `Compare` of the same pair"; ok1 && ok2 {
		add(target{name: nameDispatchCost, what: what,
			figure:  fmt.Sprintf("%.2f× (dispatch %s, compare %s)", d/c, fmtTime(d), fmtTime(c)),
			verdict: verdict(d <= 3*c),
			profile: &profile{"dispatch-overhead", ".", ".", "^BenchmarkDispatch$/^dispatch$", ""}})
	} else {
		notRun(nameDispatchCost, what, "root BenchmarkDispatch")
	}
	const memWhat = "bookkeeping ≤ 1 KiB per key at 100,000 keys × 10 subscriptions"
	if m, ok := lib.median("MemoryPerKey", "B/key"); ok {
		add(target{name: nameBookkeeping, what: memWhat, figure: fmt.Sprintf("%.0f B/key", m), verdict: verdict(m <= 1024)})
	} else {
		notRun(nameBookkeeping, memWhat, "root BenchmarkMemoryPerKey")
	}

	// An fsm transition against bare looplab/fsm.
	o, ok1 := lib.median("Transition/impl=opbus", "sec/op")
	l, ok2 := lib.median("Transition/impl=looplab", "sec/op")
	if what := "fsm transition ≤ 1.5× bare looplab/fsm: Machine.Fire's work without the bus (fsm `BenchmarkTransition`, impl=opbus, unexported entry point)"; ok1 && ok2 {
		add(target{name: nameFSM, what: what,
			figure:  fmt.Sprintf("%.2f× (%s vs %s)", o/l, fmtTime(o), fmtTime(l)),
			verdict: verdict(o <= 1.5*l),
			// impl=opbus/guarded and impl=opbus/dispatch are nested under impl=opbus,
			// so the profile runs them too; the focus keeps Machine.fire's samples.
			profile: &profile{"fsm-fire", ".", "./fsm", "^BenchmarkTransition$/^impl=opbus$", `fsm\.\(\*Machine\)\.fire$`}})
	} else {
		notRun(nameFSM, what, "fsm BenchmarkTransition")
	}
	fire, ok1 := peers.median("FSM/toggle/opbus-bus-fire", "sec/op")
	nofire, ok2 := peers.median("FSM/toggle/opbus-bus-nofire", "sec/op")
	lab, ok3 := peers.median("FSM/toggle/looplab", "sec/op")
	if what := "fsm transition ≤ 1.5× bare looplab/fsm: through the public API, a `bus.Dispatch` whose handler calls Machine.Fire (bench `BenchmarkFSM`, opbus-bus-fire)"; ok1 && ok3 {
		add(target{name: nameFSM, what: what,
			figure:  fmt.Sprintf("%.2f× (%s vs %s)", fire/lab, fmtTime(fire), fmtTime(lab)),
			verdict: verdict(fire <= 1.5*lab),
			profile: &profile{"fsm-bus-fire", "bench", ".", "^BenchmarkFSM$/^toggle$/^opbus-bus-fire$", ""}})
		if ok2 {
			add(target{name: nameFSM, what: "for orientation: the machine's share of that, opbus-bus-fire − opbus-bus-nofire (a difference of medians)",
				figure:  fmt.Sprintf("%.2f× looplab (%s)", (fire-nofire)/lab, fmtTime(fire-nofire)),
				verdict: "–"})
		}
	} else {
		notRun(nameFSM, what, "bench BenchmarkFSM")
	}

	// The adapters' own benchmarks, which need a real API server or hook
	// processes: their documents record the figures and the verdicts.
	const k8sWhat = "watch latency: status patch → handler start p99 < 50 ms over the API server's own watch p99 in the same run, at 100 patches/s with default settings (4 workers), also measured at 500/s (1,000 patches over 100 Pods), and bookkeeping < 1 KiB per object at 10,000 Pods, against a real API server"
	if ext.k8s == "" {
		add(target{name: nameK8s, what: k8sWhat, figure: "not measured yet: `adapters/k8s/BENCHMARKS.md` does not exist", verdict: "not measured"})
	} else {
		v := overall(verdicts(ext.k8s, 6))
		if v == "" {
			v = "see there"
		}
		add(target{name: nameK8s, what: k8sWhat, figure: "recorded in [adapters/k8s/BENCHMARKS.md](../adapters/k8s/BENCHMARKS.md) by the commands it names, not by this run", verdict: v})
	}

	const jujuWhat = "Juju hook: adapter overhead < 10 ms beyond the hook tools"
	switch rows := ext.hookOverheads(); {
	case ext.charm == "":
		add(target{name: nameHook, what: jujuWhat, figure: "`examples/charm/BENCHMARKS.md` does not exist", verdict: "not measured"})
	case len(rows) == 0:
		add(target{name: nameHook, what: jujuWhat, figure: "no overhead column found in [examples/charm/BENCHMARKS.md](../examples/charm/BENCHMARKS.md)", verdict: "not measured"})
	default:
		var figs []string
		ok := true
		for _, r := range rows {
			figs = append(figs, fmt.Sprintf("%s: %s ms", r.name, r.overhead))
			ok = ok && r.value < 10
		}
		add(target{name: nameHook, what: jujuWhat, figure: "wall-time overhead per hook, " + strings.Join(figs, "; ") + " (recorded in [examples/charm/BENCHMARKS.md](../examples/charm/BENCHMARKS.md), not by this run)", verdict: verdict(ok)})
	}

	// Compare against the peers, and dispatch against the workqueue.
	for _, form := range []struct {
		family, label string
		decoded       bool
	}{
		{"Diff", "decoded", true},
		// From bytes, opbus compares the texts themselves (jsoncompare.Compare).
		{"DiffBytes", "from JSON bytes: jsoncompare.Compare", false},
	} {
		fam := peers.family(form.family)
		if fam == nil {
			notRun(nameDiffPeers, "`Compare` faster than every full-diff peer and within 2× of the floor ("+form.label+")", "bench BenchmarkDiff")
			continue
		}
		for _, fx := range fam.fixtures {
			cv, ok := compareVerdict(fam, fx, form.decoded)
			if !ok {
				continue
			}
			fig := fmt.Sprintf("%s; %s the floor", cv.vsPeer, cv.vsFloor)
			if fx == "pod-equal" && form.decoded {
				fig += fmt.Sprintf("; %s allocs/op", fmtCount(cv.allocs))
			}
			t := target{name: nameDiffPeers,
				what:    fmt.Sprintf("`Compare` faster than every full-diff peer and within 2× of the floor: %s (%s)", fx, form.label),
				figure:  fig,
				verdict: verdict(len(cv.missed) == 0)}
			if t.missed() {
				t.figure += " — " + strings.Join(cv.missed, ", ")
				if !form.decoded && cv.slower {
					// From bytes the decoders differ: say how the peer's own decoding
					// compares with the floor's encoding/json.
					t.figure += fmt.Sprintf(", which decodes with its own JSON decoder and itself takes %s the floor (encoding/json + walk)", cv.peerVsFloor)
				}
				t.profile = &profile{strings.ToLower(form.family) + "-" + fx, "bench", ".", "^Benchmark" + form.family + "$/^" + fx + "$/^opbus$", ""}
			}
			add(t)
		}
	}
	bus, ok1 := peers.median("Dispatch/pod-10k/opbus", "sec/op")
	wq, ok2 := peers.median("Dispatch/pod-10k/workqueue-predicate", "sec/op")
	if what := "dispatch throughput ≥ 2× the client-go workqueue + controller-runtime predicate pipeline at equal filtering work (10,000 Pods, 20 handlers)"; ok1 && ok2 {
		add(target{name: nameThroughput, what: what,
			figure:  fmt.Sprintf("%.2f× (%s vs %s updates/s)", wq/bus, fmtThousands(1/bus), fmtThousands(1/wq)),
			verdict: verdict(wq >= 2*bus),
			profile: &profile{"dispatch-bus", "bench", ".", "^BenchmarkDispatch$/^pod-10k$/^opbus$", ""}})
	} else {
		notRun(nameThroughput, what, "bench BenchmarkDispatch")
	}

	// Related objects: one change's cost and a relation's memory.
	one, ok1 := lib.median("Related/children=1", "sec/op")
	many, ok2 := lib.median("Related/children=1000", "sec/op")
	if what := "a related object's change costs within 2× with 1,000 related objects of what it costs with one"; ok1 && ok2 {
		add(target{name: nameRelated, what: what,
			figure:  fmt.Sprintf("%.2f× (%s vs %s)", many/one, fmtTime(many), fmtTime(one)),
			verdict: verdict(many <= 2*one),
			profile: &profile{"related-1000", ".", ".", "^BenchmarkRelated$/^children=1000$", ""}})
	} else {
		notRun(nameRelated, what, "root BenchmarkRelated")
	}
	with, ok1 := lib.median("MemoryPerRelation/related=true", "B/pair")
	without, ok2 := lib.median("MemoryPerRelation/related=false", "B/pair")
	if what := "an object with one relation costs ≤ 1 KiB more than without (10,000 pairs)"; ok1 && ok2 {
		add(target{name: nameRelated, what: what,
			figure:  fmt.Sprintf("%.0f B more per relation (%.0f vs %.0f B per pair)", with-without, with, without),
			verdict: verdict(with-without <= 1024)})
	} else {
		notRun(nameRelated, what, "root BenchmarkMemoryPerRelation")
	}
	return ts
}

// renderTargets writes the targets table, then each missed target's profile.
func renderTargets(w io.Writer, ts []target, profiles string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("| measures | target | measured | verdict |\n|---|---|---|---|\n")
	var missed []target
	for _, t := range ts {
		v := t.verdict
		if t.missed() {
			v = "**missed**"
			missed = append(missed, t)
		}
		p("| %s | %s | %s | %s |\n", t.name, t.what, t.figure, v)
	}
	p("\n")
	if len(missed) == 0 {
		p("Every target measured in this run is met.\n\n")
		return
	}
	p("**Missed:**\n\n")
	for _, t := range missed {
		p("- %s: %s — %s.\n", t.name, t.what, t.figure)
	}
	p("\n")
	for _, t := range missed {
		if t.profile == nil {
			continue
		}
		text, err := os.ReadFile(filepath.Join(profiles, t.profile.id+".txt"))
		if err != nil {
			continue
		}
		// Markdown is not rendered inside <summary>: no backquotes there.
		summary := strings.ReplaceAll(t.what, "`", "")
		p("<details><summary>CPU profile, %s: %s</summary>\n\n```\n%s```\n\n</details>\n\n", t.name, summary, ensureNewline(string(text)))
	}
}

// missedProfiles lists the profiles to take for the missed targets, one per line:
// id, module, package, -bench regexp and pprof focus (may be empty), separated by tabs.
func missedProfiles(w io.Writer, ts []target) {
	seen := map[string]bool{}
	for _, t := range ts {
		if !t.missed() || t.profile == nil || seen[t.profile.id] {
			continue
		}
		seen[t.profile.id] = true
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.profile.id, t.profile.module, t.profile.pkg, t.profile.bench, t.profile.focus)
	}
}

func ensureNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
