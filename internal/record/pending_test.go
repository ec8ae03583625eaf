package record

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// st is a state for the tests: "u1:a" is an update of incarnation a with
// value 1, "d:a" the deletion of a, "u1" and "d" of an unknown one; an
// update absorbed by the next notes it in seen.
type st struct {
	del  bool
	inc  string
	val  string
	seen string
}

func parse(s string) []st {
	var out []st
	for _, f := range strings.Fields(s) {
		kind, inc, _ := strings.Cut(f, ":")
		x := st{inc: inc, del: kind == "d"}
		if !x.del {
			x.val = kind[1:]
		}
		out = append(out, x)
	}
	return out
}

func (x st) String() string {
	s := "u" + x.val
	if x.del {
		s = "d"
	}
	if x.inc != "" {
		s += ":" + x.inc
	}
	if x.seen != "" {
		s += "+" + x.seen
	}
	return s
}

func show(l []st) string {
	out := make([]string, len(l))
	for i, x := range l {
		out[i] = x.String()
	}
	return strings.Join(out, " ")
}

var rules = Rules[st]{
	Deletion:   func(x *st) (bool, string) { return x.del, x.inc },
	Supersedes: func(x, y st) bool { return !x.del && !y.del && x.inc == y.inc },
	Absorb:     func(x, y st) st { y.seen = x.seen + x.val + y.seen; return y },
}

func TestKeep(t *testing.T) {
	for _, c := range []struct {
		in    string
		whole bool
		want  string
		why   string
	}{
		{"u1:a u2:a u3:a", false, "u3:a+12", "a run of updates of one incarnation keeps its latest, which absorbs the rest"},
		{"u1:a d:a u2:b u3:b", false, "u1:a d:a u3:b+2", "deletions are kept and end a run"},
		{"u1:a u2:b", false, "u1:a u2:b", "an incarnation boundary ends a run"},
		{"u1:a u2:a u3:a", true, "u1:a u3:a+2", "an abandoned pass's state stays whole and first"},
		{"u1:a", true, "u1:a", "one state is kept as it is"},
		{"", false, "", "nothing is nothing"},
	} {
		t.Run(c.why, func(t *testing.T) {
			in := parse(c.in)
			before := slices.Clone(in)
			if got := show(rules.Keep(in, c.whole)); got != c.want {
				t.Errorf("Keep(%q, %v) = %q; want %q", c.in, c.whole, got, c.want)
			}
			if !slices.Equal(in, before) {
				t.Errorf("Keep changed its input: %v, was %v", show(in), show(before))
			}
		})
	}
}

func TestFoldMarks(t *testing.T) {
	in := parse("u1:a u2:a d:a u3:b")
	var marked []string
	got := rules.Fold(in, func(x *st) { marked = append(marked, x.String()); x.val += "!" })
	if show(got) != "u2!:a+1 d:a u3:b" || fmt.Sprint(marked) != "[u2:a+1]" {
		t.Errorf("Fold = %q, marked %v; want u2!:a+1 d:a u3:b, marked [u2:a+1]", show(got), marked)
	}
}

func TestDropRepeats(t *testing.T) {
	for _, c := range []struct {
		in   string
		life Life
		want string
		why  string
	}{
		{"d:a u1:b", Life{Ended: true, EndedInc: "a"}, "u1:b", "a repeat of the finished deletion of a is dropped"},
		{"d:b", Life{Ended: true, EndedInc: "a"}, "d:b", "the deletion of another incarnation is kept"},
		{"d d", Life{Live: true}, "d", "without incarnation IDs, a deletion after a finished one is a repeat"},
		{"d u1 d", Life{Ended: true}, "u1 d", "an update starts an incarnation, whose deletion is kept"},
		{"d:a u1:a d:a", Life{Live: true}, "d:a u1:a", "a deletion of a, seen ended already, is a repeat even after an update of a"},
		{"d", Life{Live: true, Ended: true}, "d", "the deletion of a live incarnation is no repeat"},
	} {
		t.Run(c.why, func(t *testing.T) {
			if got := show(rules.DropRepeats(parse(c.in), c.life)); got != c.want {
				t.Errorf("DropRepeats(%q, %+v) = %q; want %q", c.in, c.life, got, c.want)
			}
		})
	}
}

func TestReplaces(t *testing.T) {
	for _, c := range []struct {
		in, inc string
		want    bool
	}{
		{"u1:b", "a", true},
		{"u1:a", "a", false},
		{"d:b", "a", false},
		{"u1", "a", false},
		{"u1:b", "", false},
		{"", "a", false},
	} {
		if got := rules.Replaces(parse(c.in), c.inc); got != c.want {
			t.Errorf("Replaces(%q, %q) = %v; want %v", c.in, c.inc, got, c.want)
		}
	}
}
