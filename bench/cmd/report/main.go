// Command report turns benchmark output into Markdown: one table per family with ns/op,
// B/op and allocs/op (medians, with benchstat's 95% confidence interval), the ratio to
// the fastest peer and to the floor measured in the same run, what each detection
// approach reports, and whether opbus meets its targets.
//
// Usage:
//
//	go run ./cmd/report -raw results/raw.txt -out results/report.md
//
// writes the section for the bench module's families alone (bench/run does this).
//
//	go run ./cmd/report -doc -raw results/raw.txt -lib results/lib.txt \
//		-machine results/machine.txt -commands results/commands.txt \
//		-charm ../examples/charm/BENCHMARKS.md -k8s ../adapters/k8s/BENCHMARKS.md \
//		-profiles results/profiles -out REPORT.md
//
// writes the whole of bench/REPORT.md (scripts/bench does this): the machine and the
// commands, the library's performance targets, each named by what it measures, with
// this run's figures and a verdict each, the CPU profile of each missed target, the
// tables of the bench module and of the library's own benchmarks (-lib: the root
// package and fsm/), and links to the adapters' documents, which their own benchmarks
// write (their figures on the targets are read from them). With -missed instead of
// -doc it prints the profiles to take for the missed targets, one per line: id, module
// directory, package and -bench regexp, separated by tabs. With -headline it prints
// the table of headline ratios that README.md shows, after a line naming the run
// (-machine); with -readme as well it writes them between the markers of that file.
//
// The raw files are `go test -bench` output in the Go benchmark format; configuration
// lines before it (command, go-version, cpu-model, cores, date, load-average) are shown
// as the machine and the command that produced the figures. The machine file holds
// "key: value" lines.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	var o options
	flag.StringVar(&o.raw, "raw", "results/raw.txt", "the bench module's benchmark output")
	flag.StringVar(&o.out, "out", "results/report.md", "Markdown file to write (- for stdout)")
	flag.BoolVar(&o.doc, "doc", false, "write the whole REPORT.md, not only the bench module's section")
	flag.BoolVar(&o.missed, "missed", false, "print the profiles to take for missed targets, and nothing else")
	flag.StringVar(&o.lib, "lib", "", "the library's own benchmark output (root package and fsm/)")
	flag.StringVar(&o.machine, "machine", "", `"key: value" lines describing the machine and the run`)
	flag.StringVar(&o.commands, "commands", "", "the commands of the run, one per line")
	flag.StringVar(&o.charm, "charm", "", "examples/charm/BENCHMARKS.md")
	flag.StringVar(&o.k8s, "k8s", "", "adapters/k8s/BENCHMARKS.md, if it exists")
	flag.StringVar(&o.profiles, "profiles", "", "directory of the missed targets' profiles (<id>.txt)")
	flag.BoolVar(&o.headline, "headline", false, "print the headline ratios of -raw and -lib as a Markdown table, or with -readme write them into that file")
	flag.StringVar(&o.readme, "readme", "", "with -headline: the Markdown file whose headline table to replace (../README.md)")
	flag.Parse()
	if err := generate(o); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

type options struct {
	raw, out, lib, machine, commands, charm, k8s, profiles, readme string
	doc, missed, headline                                          bool
}

func generate(o options) error {
	peers, err := parseFile(o.raw)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch {
	case o.headline:
		lib, err := parseFile(o.lib)
		if err != nil {
			return err
		}
		var machine map[string]string
		if o.machine != "" {
			if machine, err = readConfig(o.machine); err != nil {
				return err
			}
		}
		if o.readme != "" {
			return writeHeadlines(o.readme, machine, headlines(lib, peers))
		}
		renderRun(os.Stdout, machine)
		renderHeadlines(os.Stdout, headlines(lib, peers))
		return nil
	case o.doc || o.missed:
		in := docInput{peers: peers, profiles: o.profiles}
		if o.lib != "" {
			if in.lib, err = parseFile(o.lib); err != nil {
				return err
			}
		}
		if in.ext, err = readExternal(o.charm, o.k8s); err != nil {
			return err
		}
		if o.machine != "" {
			if in.machine, err = readConfig(o.machine); err != nil {
				return err
			}
		}
		if o.commands != "" {
			b, err := os.ReadFile(o.commands)
			if err != nil {
				return err
			}
			in.commands = strings.TrimSpace(string(b))
		}
		if o.missed {
			missedProfiles(&buf, targets(in.lib, in.peers, in.ext))
		} else {
			renderDoc(&buf, in)
		}
	default:
		renderSection(&buf, peers)
	}
	if o.out == "-" || o.missed {
		_, err = os.Stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(o.out, buf.Bytes(), 0o644)
}

// readConfig reads "key: value" lines.
func readConfig(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			cfg[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return cfg, sc.Err()
}

const ratiosExplained = "Each figure is the median of the runs (one per round); ± is the 95% confidence interval around it as benchstat computes it (±∞: too few runs to tell). " +
	"Ratios divide medians of the same run: **× fastest** by the fastest peer on the same fixture (opbus included, so the fastest shows 1.00; yardsticks such as the floor excluded), " +
	"**× floor** by the family's floor, the least work that can answer the same question (for the diffs, `walk`: a plain recursive equality walk over both trees that visits every node and records nothing)."

// renderSection writes the bench module's section, as bench/run leaves it in
// results/report.md.
func renderSection(w io.Writer, peers *run) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	cfg := peers.config
	p("## Results\n\n")
	p("Produced by `%s` on %s.\n\n", orUnknown(cfg["command"]), orUnknown(cfg["date"]))
	p("Machine: %s.\n\n", machineLine(cfg, cfg["load-average"], ""))
	p("%s Raw output: `results/raw.txt`; benchstat's view: `results/benchstat.txt`.\n\n", ratiosExplained)
	renderBench(w, peers, "###")
}

// machineLine describes the machine from configuration lines.
func machineLine(cfg map[string]string, loadStart, loadEnd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s/%s; CPU: %s", orUnknown(cfg["go-version"]), orUnknown(cfg["goos"]), orUnknown(cfg["goarch"]), orUnknown(cfg["cpu-model"]))
	if c := cfg["cpu"]; c != "" && c != cfg["cpu-model"] {
		fmt.Fprintf(&b, " (Go reports: %s)", c)
	}
	fmt.Fprintf(&b, "; %s cores", orUnknown(cfg["cores"]))
	switch {
	case loadStart != "" && loadEnd != "":
		fmt.Fprintf(&b, "; load average (1, 5, 15 min) %s at the start, %s at the end", loadStart, loadEnd)
	case loadStart != "":
		fmt.Fprintf(&b, "; load average at the start: %s", loadStart)
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// docInput is everything REPORT.md is made of.
type docInput struct {
	peers, lib *run
	ext        *external
	machine    map[string]string
	commands   string
	profiles   string
}

func renderDoc(w io.Writer, in docInput) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	m := in.machine
	if m == nil {
		m = map[string]string{}
	}
	// The machine file has the run's view; the raw file adds what go test reports.
	cfg := map[string]string{}
	for k, v := range in.peers.config {
		cfg[k] = v
	}
	for k, v := range m {
		cfg[k] = v
	}

	p("# Benchmarks\n\n")
	p("Written by `scripts/bench` (`make bench`), which runs every benchmark of the library and of `bench/` (opbus against its peers, side by side in one run). ")
	p("Rerun it rather than editing this file.\n\n")

	p("## Machine and commands\n\n")
	p("- Machine: %s.\n", machineLine(cfg, m["load-start"], m["load-end"]))
	if d := m["started"]; d != "" {
		p("- Run: started %s, took %s.\n", d, orUnknown(m["duration"]))
	}
	if c := m["count"]; c != "" {
		p("- %s rounds of `-count 1` (every benchmark once per round, so that the rows compared are measured seconds apart), `-benchtime %s`.", c, orUnknown(m["benchtime"]))
		if n := atoiOr(c, 0); n < 6 {
			p(" **Fewer runs than the 6 the targets are judged on**%s: the confidence intervals are wider than they would be.", reasonSuffix(m["count-reason"]))
		}
		if strings.HasSuffix(m["benchtime"], "x") {
			p(" **A quick run** (a fixed number of iterations per benchmark): it shows that everything runs, but timer resolution, warm-up and setup dominate, so its figures and verdicts mean nothing.")
		}
		p("\n")
	}
	p("- The machine is shared with other work; a high load average widens the intervals and can shift whole rows. In each round the rows of one family run one after another, seconds apart; across rounds, minutes apart.\n\n")
	if in.commands != "" {
		p("Commands, from the repository root:\n\n```sh\n%s\n```\n\n", in.commands)
	}
	p("%s\n\n", ratiosExplained)

	if in.lib != nil {
		p("## Headline ratios\n\n")
		p("opbus's time over the other's, in this run (below 1: opbus is faster). README.md shows the same table.\n\n")
		renderHeadlines(w, headlines(in.lib, in.peers))
		p("\n")
	}

	p("## Targets\n\n")
	p("Each performance target of the library, named by what it measures, with this run's figure and a plain verdict (met when the median meets it). ")
	p("Where a target is missed, the CPU profile of the benchmark that misses it follows the table (`go test -cpuprofile`, then `go tool pprof -top`; the profile covers the benchmark's setup too).\n\n")
	renderTargets(w, targets(in.lib, in.peers, in.ext), in.profiles)

	p("## opbus and its peers (`bench/`)\n\n")
	p("Fixtures: `testdata/fixtures` at the repository root, written by `go run ./internal/fixturegen`. Raw output: [results/raw.txt](results/raw.txt); benchstat's view: [results/benchstat.txt](results/benchstat.txt).\n\n")
	renderBench(w, in.peers, "###")

	if in.lib != nil {
		p("## The library's own benchmarks (root module and `fsm/`)\n\n")
		p("Raw output: [results/lib.txt](results/lib.txt); benchstat's view: [results/lib-benchstat.txt](results/lib-benchstat.txt).\n\n")
		renderLib(w, in.lib, "###")
	}

	p("## The adapters\n\n")
	p("Their benchmarks need hook processes or a real API server, so they are run by the commands their documents name, not by `scripts/bench`; the targets above read their figures from them.\n\n")
	for _, d := range []struct{ what, file, text string }{
		{"Juju hooks: the cost of a hook against the fake hook tools", "examples/charm/BENCHMARKS.md", in.ext.charm},
		{"Kubernetes: watch latency and memory per object against a real API server", "adapters/k8s/BENCHMARKS.md", in.ext.k8s},
	} {
		if d.text == "" {
			p("- %s: not measured yet (`%s` does not exist).\n", d.what, d.file)
		} else {
			p("- %s: [%s](../%s).\n", d.what, d.file, d.file)
		}
	}
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

func atoiOr(s string, def int) int {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		return def
	}
	return n
}
