package main

import "testing"

// TestPodDiff: the released modules work together: the adapter's settings
// make the core ignore the resource version and address the container by name.
func TestPodDiff(t *testing.T) {
	d, err := podDiff()
	if err != nil {
		t.Fatal(err)
	}
	const want = "status.containerStatuses[name=app].ready"
	if len(d) != 1 || d[0].Path.String() != want {
		t.Fatalf("diff = %v, want one change at %s", d, want)
	}
}
