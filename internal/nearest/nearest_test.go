package nearest

import "testing"

// TestNearest: misspellings find the name meant; the distance is
// Levenshtein's.
func TestNearest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		known []string
		want  string
	}{
		{"verison", []string{"size", "version", "color"}, "version"},
		{"Lables", []string{"annotations", "labels"}, "labels"},
		{"nodeNme", []string{"nodeName", "nodeSelector", "hostname"}, "nodeName"},
	} {
		if got := Names(tc.name, tc.known, 1); len(got) != 1 || got[0] != tc.want {
			t.Errorf("Names(%q, %v) = %v, want %s", tc.name, tc.known, got, tc.want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
