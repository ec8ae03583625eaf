// Command report turns the raw output of the bench module's benchmarks into a Markdown
// section: one table per family with ns/op, B/op and allocs/op (medians, with benchstat's
// 95% confidence interval), the ratio to the fastest peer and to the floor measured in
// the same run, what each detection approach reports, and whether opbus meets its
// targets.
//
// Usage:
//
//	go run ./cmd/report -raw results/raw.txt -out results/report.md
//
// The raw file is `go test -bench` output in the Go benchmark format. The run script
// puts configuration lines before it (command, go-version, cpu-model, cores, date),
// which the report shows as the machine and the command that produced the figures.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/opbus/opbus/bench"
)

func main() {
	raw := flag.String("raw", "results/raw.txt", "benchmark output to read")
	out := flag.String("out", "results/report.md", "Markdown file to write (- for stdout)")
	flag.Parse()
	if err := run(*raw, *out); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(rawFile, outFile string) error {
	f, err := os.Open(rawFile)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := parse(f, rawFile)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := render(&buf, res); err != nil {
		return err
	}
	if outFile == "-" {
		_, err = os.Stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(outFile, buf.Bytes(), 0o644)
}

// results holds every measurement, keyed by family, fixture, entry and unit, with
// fixtures and entries in the order they first appear.
type results struct {
	config   map[string]string
	families map[string]*family
}

type family struct {
	fixtures []string
	entries  []string
	samples  map[key][]float64
}

type key struct{ fixture, entry, unit string }

var procsSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader, name string) (*results, error) {
	res := &results{config: map[string]string{}, families: map[string]*family{}}
	rd := benchfmt.NewReader(r, name)
	var syntaxErrs []error
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			syntaxErrs = append(syntaxErrs, rec)
		case *benchfmt.Result:
			for _, c := range rec.Config {
				if c.File {
					res.config[c.Key] = string(c.Value)
				}
			}
			full := procsSuffix.ReplaceAllString(string(rec.Name.Full()), "")
			parts := strings.Split(full, "/")
			if len(parts) != 3 {
				continue // not one of ours: Family/fixture/entry
			}
			fam := res.families[parts[0]]
			if fam == nil {
				fam = &family{samples: map[key][]float64{}}
				res.families[parts[0]] = fam
			}
			if !slices.Contains(fam.fixtures, parts[1]) {
				fam.fixtures = append(fam.fixtures, parts[1])
			}
			if !slices.Contains(fam.entries, parts[2]) {
				fam.entries = append(fam.entries, parts[2])
			}
			for _, v := range rec.Values {
				k := key{parts[1], parts[2], v.Unit}
				fam.samples[k] = append(fam.samples[k], v.Value)
			}
		}
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	if len(res.families) == 0 {
		return nil, errors.Join(append([]error{fmt.Errorf("%s: no benchmark results", name)}, syntaxErrs...)...)
	}
	return res, nil
}

// summary returns the median of the samples and benchstat's confidence interval as
// "±N%" ("±∞" with too few runs for one).
func (f *family) summary(fixture, entry, unit string) (center float64, pct string, ok bool) {
	vals := f.samples[key{fixture, entry, unit}]
	if len(vals) == 0 {
		return 0, "", false
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(vals, &benchmath.DefaultThresholds), 0.95)
	return s.Center, "±" + s.PctRangeString(), true
}

func (f *family) median(fixture, entry, unit string) (float64, bool) {
	c, _, ok := f.summary(fixture, entry, unit)
	return c, ok
}

func info(peers []bench.Peer, name string) bench.Peer {
	for _, p := range peers {
		if p.Name == name {
			return p
		}
	}
	return bench.Peer{Name: name}
}

// fastest returns the entry with the lowest median time on the fixture among those that
// qualify, or "" if none does.
func (f *family) fastest(fixture string, qualifies func(entry string) bool) (string, float64) {
	best, bestT := "", math.Inf(1)
	for _, e := range f.entries {
		if !qualifies(e) {
			continue
		}
		if t, ok := f.median(fixture, e, "sec/op"); ok && t < bestT {
			best, bestT = e, t
		}
	}
	return best, bestT
}

func render(w io.Writer, res *results) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	cfg := res.config
	p("## Results\n\n")
	p("Produced by `%s` on %s.\n\n", orUnknown(cfg["command"]), orUnknown(cfg["date"]))
	p("Machine: %s, %s/%s; CPU: %s", orUnknown(cfg["go-version"]), orUnknown(cfg["goos"]), orUnknown(cfg["goarch"]), orUnknown(cfg["cpu-model"]))
	if c := cfg["cpu"]; c != "" && c != cfg["cpu-model"] {
		p(" (Go reports: %s)", c)
	}
	p("; %s cores", orUnknown(cfg["cores"]))
	if l := cfg["load-average"]; l != "" {
		p("; load average at the start: %s", l)
	}
	p(".\n\n")
	p("Each figure is the median of the runs (`-count`); ± is the 95%% confidence interval around it as benchstat computes it (±∞: too few runs to tell). ")
	p("Ratios divide medians of the same run: **× fastest** by the fastest peer on the same fixture (opbus included, so the fastest shows 1.00; yardsticks such as the floor excluded), ")
	p("**× floor** by `walk`, a plain recursive equality walk over both trees that visits every node and records nothing. ")
	p("Raw output: `results/raw.txt`; benchstat's view: `results/benchstat.txt`.\n\n")

	type section struct {
		family, title, intro string
		peers                []bench.Peer
	}
	sections := []section{
		{"Diff", "Structural diff from decoded objects (`BenchmarkDiff`)",
			"Both objects are already decoded the way client-go decodes them (integers as int64). pod: one container goes running → terminated; pod-equal: two separately decoded copies of the same Pod; big: ~200 KB, one leaf changed; deep: maps 30 deep, one leaf changed at the bottom.",
			bench.DiffPeers},
		{"DiffBytes", "Structural diff from JSON bytes (`BenchmarkDiffBytes`)",
			"The same, starting from the compact JSON of both sides (watch events arrive as bytes): decoding is timed.",
			bench.DiffPeers},
	}
	for _, s := range sections {
		fam := res.families[s.family]
		if fam == nil {
			continue
		}
		p("### %s\n\n%s\n\n", s.title, s.intro)
		renderDiffTable(w, fam, s.peers)
		if s.family == "Diff" {
			renderTargets(w, fam)
		}
	}
	if fam := res.families["Detect"]; fam != nil {
		p("### Change detection per subscription (`BenchmarkDetect`)\n\n")
		p("Does `status.containerStatuses` differ between the previous and the new Pod (as `*unstructured.Unstructured`)? ")
		p("pod: the kubelet's write, container app terminated (the field changed); pod-annotated: the library's own bookkeeping write (it did not). ")
		p("What an approach keeps between events (shell-operator's cached checksum) is computed outside the timed loop. ")
		p("**× fastest** divides by the fastest approach that answers correctly on every fixture.\n\n")
		renderDetectTable(w, fam)
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func renderDiffTable(w io.Writer, fam *family, peers []bench.Peer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("| fixture | library | returns | time/op | ± | B/op | allocs/op | × fastest | × floor |\n")
	p("|---|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, fx := range fam.fixtures {
		_, fastT := fam.fastest(fx, func(e string) bool { return !info(peers, e).Baseline })
		floorT, haveFloor := fam.median(fx, bench.Floor, "sec/op")
		for _, e := range fam.entries {
			t, pct, ok := fam.summary(fx, e, "sec/op")
			if !ok {
				continue
			}
			name := e
			if e == bench.Opbus {
				name = "**opbus**"
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", fx, name, info(peers, e).Returns,
				fmtTime(t), pct, fmtUnit(fam, fx, e, "B/op", fmtBytes), fmtUnit(fam, fx, e, "allocs/op", fmtCount),
				ratio(t, fastT, !info(peers, e).Baseline), ratio(t, floorT, haveFloor))
		}
	}
	p("\n")
	for _, e := range fam.entries {
		if n := info(peers, e).Note; n != "" {
			p("- `%s`: %s\n", e, n)
		}
	}
	p("\n")
}

// renderTargets states plainly whether Compare meets the targets of issues 2 and 7 on
// each fixture: faster than every peer that produces a full diff, within 2× of the floor,
// no allocation on equal inputs.
func renderTargets(w io.Writer, fam *family) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("**Targets for `opbus.Compare`** (from decoded objects):\n\n")
	p("| fixture | vs fastest full-diff peer | within 2× of the floor | allocs/op | verdict |\n")
	p("|---|---|---|--:|---|\n")
	for _, fx := range fam.fixtures {
		t, ok := fam.median(fx, bench.Opbus, "sec/op")
		if !ok {
			continue
		}
		var missed []string
		peer, peerT := fam.fastest(fx, func(e string) bool {
			i := info(bench.DiffPeers, e)
			return e != bench.Opbus && i.FullDiff && !i.Baseline
		})
		vsPeer := "no peer ran"
		if peer != "" {
			vsPeer = fmt.Sprintf("%.2f× %s", t/peerT, peer)
			if t >= peerT {
				missed = append(missed, "slower than "+peer)
			}
		}
		vsFloor := "no floor"
		if floorT, ok := fam.median(fx, bench.Floor, "sec/op"); ok {
			vsFloor = fmt.Sprintf("%.2f×", t/floorT)
			if t > 2*floorT {
				missed = append(missed, "more than 2× the floor")
			}
		}
		allocs, _ := fam.median(fx, bench.Opbus, "allocs/op")
		if fx == "pod-equal" && allocs != 0 {
			missed = append(missed, "allocates on equal inputs")
		}
		verdict := "met"
		if len(missed) > 0 {
			verdict = "**missed**: " + strings.Join(missed, ", ")
		}
		p("| %s | %s | %s | %s | %s |\n", fx, vsPeer, vsFloor, fmtCount(allocs), verdict)
	}
	p("\n")
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
			name := e
			if strings.HasPrefix(e, bench.Opbus) {
				name = "**" + e + "**"
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", fx, name,
				fmtTime(t), pct, fmtUnit(fam, fx, e, "B/op", fmtBytes), fmtUnit(fam, fx, e, "allocs/op", fmtCount),
				ratio(t, fastT, alwaysCorrect(e)), ratio(t, floorT, haveFloor), yesNo(got == 1), verdict)
		}
	}
	p("\n")
	for _, e := range fam.entries {
		if n := info(bench.Detectors, e).Note; n != "" {
			p("- `%s`: %s\n", e, n)
		}
	}
	p("- `opbus-digest`: not measured yet; the per-subscription digest is issue 3.\n\n")
}

func fmtUnit(fam *family, fx, e, unit string, format func(float64) string) string {
	v, ok := fam.median(fx, e, unit)
	if !ok {
		return "–"
	}
	return format(v)
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

func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
