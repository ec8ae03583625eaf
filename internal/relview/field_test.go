package relview

import "testing"

// TestFields checks that a field is added once per path, keeps its
// index, and matches the kinds and names of its patterns.
func TestFields(t *testing.T) {
	var fs Fields[string]
	same := func(a, b string) bool { return a == b }
	a := Field[string]{Path: "related.Pod", Kind: Pattern{Key: "Pod"}, Name: AnyOne}
	b := Field[string]{Path: "related[*].web", Kind: AnyOne, Name: Pattern{Key: "web"}}
	if fs.Add(a, same) != 0 || fs.Add(b, same) != 1 || fs.Add(a, same) != 0 || len(fs) != 2 {
		t.Fatalf("indexes wrong or a path added twice: %v", fs)
	}
	names := map[string]string{"po": "Pod"}
	byName := Field[string]{Kind: Pattern{Key: "po"}, Name: AnyOne}
	for _, c := range []struct {
		f          Field[string]
		kind, name string
		want       bool
	}{
		{a, "Pod", "x", true},
		{a, "Job", "x", false},
		{b, "Job", "web", true},
		{b, "Job", "db", false},
		{byName, "Pod", "x", true},
		{byName, "Job", "x", false},
	} {
		if got := c.f.Matches(c.kind, c.name, names); got != c.want {
			t.Errorf("%+v matches %s %s = %v, want %v", c.f, c.kind, c.name, got, c.want)
		}
	}
}
