package ignored

import (
	"errors"
	"slices"
	"testing"
)

func TestBuild(t *testing.T) {
	s := Set{Every: []string{"a", "b"}}.WithKind("Pod", "c", "a")
	build := func(p []string) ([]string, error) { return p, nil }
	cmp, _, err := Build(s, []string{"d", "b"}, build)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{"Pod", []string{"a", "b", "c", "d"}}, // every kind's, then the kind's, then the extra ones, each once
		{"Widget", []string{"a", "b", "d"}},   // a kind without patterns of its own
	} {
		if got := cmp.For(tc.kind); !slices.Equal(got, tc.want) {
			t.Errorf("For(%q) = %v, want %v", tc.kind, got, tc.want)
		}
	}
	if s2 := s.WithKind("Pod", "e"); len(s.Kinds["Pod"]) != 2 || len(s2.Kinds["Pod"]) != 3 {
		t.Errorf("WithKind modified its receiver: %v, %v", s.Kinds, s2.Kinds)
	}
	bad := errors.New("bad")
	_, kind, err := Build(s, nil, func(p []string) ([]string, error) {
		if slices.Contains(p, "c") {
			return nil, bad
		}
		return p, nil
	})
	if kind != "Pod" || err != bad {
		t.Errorf("Build with a bad kind = %q, %v, want \"Pod\", %v", kind, err, bad)
	}
}
