// Package nearest finds the known names nearest to a misspelt one, for
// errors that say "did you mean …?".
package nearest

import (
	"cmp"
	"slices"
	"strings"
)

// Names returns at most n of the names in known, nearest to name first
// (by edit distance, ignoring case; then by name).
func Names(name string, known []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	lower := strings.ToLower(name)
	all := make([]scored, 0, len(known))
	for _, k := range known {
		all = append(all, scored{k, Distance(lower, strings.ToLower(k))})
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(cmp.Compare(a.d, b.d), strings.Compare(a.name, b.name)) })
	out := make([]string, 0, min(n, len(all)))
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.name)
	}
	return out
}

// Distance returns the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
