package relview

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// TestMerge checks that coalesced changes keep the newer change of a
// child and every child either side carries, older ones first.
func TestMerge(t *testing.T) {
	doc := func(v int) map[string]any { return map[string]any{"v": v} }
	x := []Change[string]{{"a", doc(1)}, {"b", doc(1)}, {"c", nil}}
	y := []Change[string]{{"b", doc(2)}, {"d", doc(2)}}
	got := Merge(x, y)
	var s []string
	for _, c := range got {
		s = append(s, fmt.Sprintf("%s %v", c.Child, c.Doc["v"]))
	}
	if want := []string{"a 1", "c <nil>", "b 2", "d 2"}; !slices.Equal(s, want) {
		t.Fatalf("Merge = %v, want %v", s, want)
	}
	if got := Merge(nil, y); len(got) != 2 || &got[0] != &y[0] {
		t.Fatalf("Merge(nil, y) = %v, want y itself", got)
	}
	if got := Merge(x, nil); len(got) != 3 {
		t.Fatalf("Merge(x, nil) = %v, want x's changes", got)
	}
}

// TestParentsRelink checks the reverse index: Relink returns the objects
// a child related to before and forgets a child that relates to nothing.
func TestParentsRelink(t *testing.T) {
	ps := Parents[string]{}
	if before := ps.Relink("c", []string{"p", "q"}); before != nil {
		t.Fatalf("first Relink returned %v, want nil", before)
	}
	if before := ps.Relink("c", []string{"q", "r"}); !slices.Equal(before, []string{"p", "q"}) {
		t.Fatalf("Relink returned %v, want [p q]", before)
	}
	if !slices.Equal(ps["c"], []string{"q", "r"}) {
		t.Fatalf("index holds %v, want [q r]", ps["c"])
	}
	if before := ps.Relink("c", nil); !slices.Equal(before, []string{"q", "r"}) || len(ps) != 0 {
		t.Fatalf("Relink(nil) returned %v and left %v, want [q r] and nothing", before, ps)
	}
}

// TestViewsOpenClose checks that a view is made on Open, kept while it
// holds something, dropped by Close once empty, and that Views may be
// used from many goroutines (under -race).
func TestViewsOpenClose(t *testing.T) {
	var vs Views[int]
	none := func(int) Sum { return Sum{} }
	v := vs.Open(1, 2)
	if vs.Get(1) != v || vs.Open(1, 2) != v || vs.Len() != 1 {
		t.Fatal("Open did not keep the view, or made another")
	}
	v.Set(7, "K", "n", map[string]any{}, none)
	vs.Close(1)
	if vs.Get(1) != v {
		t.Fatal("Close dropped a view that holds a related object")
	}
	v.Set(7, "K", "n", nil, none)
	vs.Close(1)
	vs.Close(2) // no view: nothing happens
	if vs.Get(1) != nil || vs.Len() != 0 {
		t.Fatal("Close kept an empty view")
	}
	var wg sync.WaitGroup
	for k := range 8 {
		wg.Go(func() {
			for range 100 {
				v := vs.Open(k, 1)
				v.Set(k, "K", "n", map[string]any{}, none)
				v.Set(k, "K", "n", nil, none)
				vs.Close(k)
			}
		})
	}
	wg.Wait()
	if vs.Len() != 0 {
		t.Fatalf("%d views left", vs.Len())
	}
}

func TestEntryName(t *testing.T) {
	for _, tc := range []struct{ in, ns, name, want string }{
		{"default", "default", "web", "web"},   // the object's own namespace
		{"default", "", "node1", "node1"},      // a related object in no namespace
		{"", "", "node1", "node1"},             // neither in one
		{"default", "kube", "dns", "kube/dns"}, // another namespace
		{"", "kube", "dns", "kube/dns"},        // an object in none, a related one in one
	} {
		if got := EntryName(tc.in, tc.ns, tc.name); got != tc.want {
			t.Errorf("EntryName(%q, %q, %q) = %q, want %q", tc.in, tc.ns, tc.name, got, tc.want)
		}
	}
}
