package main

import (
	"os"
	"strconv"
	"strings"
)

// external holds the benchmark documents of the adapters, which their own benchmarks
// write by other means (a real API server, hook processes): "" if absent.
type external struct {
	charm, k8s string
}

func readExternal(charmFile, k8sFile string) (*external, error) {
	var e external
	for _, f := range []struct {
		file string
		dst  *string
	}{{charmFile, &e.charm}, {k8sFile, &e.k8s}} {
		if f.file == "" {
			continue
		}
		b, err := os.ReadFile(f.file)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		*f.dst = string(b)
	}
	return &e, nil
}

// A hookRow is one hook benchmark of the Juju example's table.
type hookRow struct {
	name, overhead string
	value          float64
}

// hookOverheads reads the rows of the first table of examples/charm/BENCHMARKS.md that
// has "tool calls" and "overhead ms" columns and is not headed "before" (the figures of
// an earlier commit, kept for comparison), keeping the hooks (rows with tool calls). A
// cell gives its median first, as "**5.7** (3.5–6.6)": the range is left out.
func (e *external) hookOverheads() []hookRow {
	var rows []hookRow
	calls, over := -1, -1
	for _, line := range strings.Split(e.charm, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if over >= 0 {
				break // the end of the table
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if over < 0 {
			for i, c := range cells {
				switch c {
				case "tool calls":
					calls = i
				case "overhead ms":
					over = i
				}
			}
			if calls < 0 || over < 0 || strings.EqualFold(cells[0], "before") {
				calls, over = -1, -1
			}
			continue
		}
		if len(cells) <= max(calls, over) || strings.HasPrefix(cells[0], "-") {
			continue
		}
		n, err := strconv.Atoi(cells[calls])
		if err != nil || n == 0 {
			continue
		}
		fig, _, _ := strings.Cut(strings.TrimSpace(cells[over]), " ")
		fig = strings.Trim(fig, "*")
		v, err := strconv.ParseFloat(fig, 64)
		if err != nil {
			continue
		}
		rows = append(rows, hookRow{name: cells[0], overhead: fig, value: v})
	}
	return rows
}

// verdicts returns, from the prose and tables of a Markdown document (headings and
// code blocks left out), up to n sentences or table rows that state a target or a
// verdict: they mention "target", or say **met** or **missed**.
func verdicts(text string, n int) []string {
	var items []string
	var para []string
	fence := false
	flush := func() {
		if len(para) > 0 {
			for _, s := range strings.SplitAfter(strings.Join(para, " "), ". ") {
				items = append(items, strings.TrimSpace(s))
			}
			para = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "```"):
			fence = !fence
			flush()
		case fence || line == "" || strings.HasPrefix(line, "#"):
			flush()
		case strings.HasPrefix(line, "|"):
			flush()
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			items = append(items, strings.Join(cells, ": "))
		default:
			para = append(para, line)
		}
	}
	flush()
	var out []string
	for _, it := range items {
		l := strings.ToLower(it)
		if len(out) < n && (strings.Contains(l, "target") || strings.Contains(l, "**met**") || strings.Contains(l, "**missed**")) {
			out = append(out, it)
		}
	}
	return out
}

// overall returns the verdict that statements add up to: missed if any says **missed**,
// met if any says **met** and none missed, "" if they say neither.
func overall(statements []string) string {
	met := false
	for _, s := range statements {
		l := strings.ToLower(s)
		if strings.Contains(l, "**missed**") {
			return "missed"
		}
		met = met || strings.Contains(l, "**met**")
	}
	if met {
		return "met"
	}
	return ""
}
