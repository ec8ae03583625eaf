package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// A run holds one file of benchmark output: for each benchmark, named without the
// "Benchmark" prefix and the GOMAXPROCS suffix ("Diff/pod/opbus"), the samples of each
// unit in benchfmt's tidy units (sec/op, B/op, allocs/op, B/s, …), and the file's
// configuration lines (command, go-version, cpu-model, …).
type run struct {
	config  map[string]string
	names   []string            // in order of first appearance
	units   map[string][]string // per name, in order of first appearance
	pkg     map[string]string   // per name
	samples map[string][]float64
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

func sampleKey(name, unit string) string { return name + "\x00" + unit }

func parse(r io.Reader, file string) (*run, error) {
	res := &run{config: map[string]string{}, units: map[string][]string{}, pkg: map[string]string{},
		samples: map[string][]float64{}}
	rd := benchfmt.NewReader(r, file)
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
			name := procsSuffix.ReplaceAllString(string(rec.Name.Full()), "")
			if _, ok := res.units[name]; !ok {
				res.names = append(res.names, name)
				res.units[name] = nil
			}
			res.pkg[name] = string(rec.GetConfig("pkg"))
			for _, v := range rec.Values {
				if !slices.Contains(res.units[name], v.Unit) {
					res.units[name] = append(res.units[name], v.Unit)
				}
				k := sampleKey(name, v.Unit)
				res.samples[k] = append(res.samples[k], v.Value)
			}
		}
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	if len(res.names) == 0 {
		return nil, errors.Join(append([]error{fmt.Errorf("%s: no benchmark results", file)}, syntaxErrs...)...)
	}
	return res, nil
}

func parseFile(file string) (*run, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f, file)
}

// summary returns the median of the samples and benchstat's 95% confidence interval
// around it as "±N%" ("±∞" with too few runs for one).
func (r *run) summary(name, unit string) (center float64, pct string, ok bool) {
	if r == nil {
		return 0, "", false
	}
	vals := r.samples[sampleKey(name, unit)]
	if len(vals) == 0 {
		return 0, "", false
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(vals, &benchmath.DefaultThresholds), 0.95)
	return s.Center, "±" + s.PctRangeString(), true
}

func (r *run) median(name, unit string) (float64, bool) {
	c, _, ok := r.summary(name, unit)
	return c, ok
}

// under returns the names at or below the benchmark top ("Compare" holds
// "Compare/pod/floor"), in order.
func (r *run) under(top string) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, n := range r.names {
		if n == top || strings.HasPrefix(n, top+"/") {
			out = append(out, n)
		}
	}
	return out
}

// A family is a view of the benchmarks named family/fixture/entry, as the bench module
// names them.
type family struct {
	r                 *run
	name              string
	fixtures, entries []string
}

// family returns the view of the named family, or nil if the run has none of it.
func (r *run) family(name string) *family {
	if r == nil {
		return nil
	}
	f := &family{r: r, name: name}
	for _, n := range r.names {
		parts := strings.Split(n, "/")
		if len(parts) != 3 || parts[0] != name {
			continue
		}
		if !slices.Contains(f.fixtures, parts[1]) {
			f.fixtures = append(f.fixtures, parts[1])
		}
		if !slices.Contains(f.entries, parts[2]) {
			f.entries = append(f.entries, parts[2])
		}
	}
	if len(f.fixtures) == 0 {
		return nil
	}
	return f
}

func (f *family) summary(fixture, entry, unit string) (float64, string, bool) {
	return f.r.summary(f.name+"/"+fixture+"/"+entry, unit)
}

func (f *family) median(fixture, entry, unit string) (float64, bool) {
	c, _, ok := f.summary(fixture, entry, unit)
	return c, ok
}

// fastest returns the entry with the lowest median time on the fixture among those that
// qualify, or "" if none does.
func (f *family) fastest(fixture string, qualifies func(entry string) bool) (string, float64) {
	best, bestT := "", 0.0
	for _, e := range f.entries {
		if !qualifies(e) {
			continue
		}
		if t, ok := f.median(fixture, e, "sec/op"); ok && (best == "" || t < bestT) {
			best, bestT = e, t
		}
	}
	return best, bestT
}
