package registration

import (
	"strings"
	"testing"
)

func TestClaim(t *testing.T) {
	n := Names{}
	if err := n.Claim("a", "handler", "opbus", false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, what string
		frozen   bool
		want     string
	}{
		{"", "collector", false, `opbus: collector: empty ID: every collector needs a name for its slot`},
		{"opbus", "slot", false, `opbus: slot "opbus": the name is the bus's own slot`},
		{"b", "handler", true, `opbus: handler "b": the bus has started`},
		{"a", "slot", false, `opbus: slot "a": duplicate ID: the slot "a" is taken by a handler`},
	} {
		err := n.Claim(c.id, c.what, "opbus", c.frozen)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Claim(%q, %q, frozen %v) = %v; want an error starting %q", c.id, c.what, c.frozen, err, c.want)
		}
	}
	if err := n.Claim("c", "collector", "opbus", false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(n.IDs(), " "); got != "a c" {
		t.Errorf("IDs = %q; want the IDs taken, sorted: a c (refused claims take nothing)", got)
	}
}

type ev int

func TestTypes(t *testing.T) {
	const names = "One, Two or Three"
	if m, err := Types("h", nil, ev(1), ev(3), names, 1, 2); err != nil || m != 1<<1|1<<2 {
		t.Errorf("Types of none = %b, %v; want the default, 110", m, err)
	}
	if m, err := Types("h", []ev{3, 3}, 1, 3, names); err != nil || m != 1<<3 {
		t.Errorf("Types of [3 3] = %b, %v; want 1000", m, err)
	}
	for _, bad := range []ev{0, 4, -1} {
		_, err := Types("h", []ev{1, bad}, 1, 3, names)
		if err == nil || !strings.Contains(err.Error(), `handler "h": unknown event type`) || !strings.HasSuffix(err.Error(), "expected "+names) {
			t.Errorf("Types with %d = %v; want an error naming the type and the known ones", bad, err)
		}
	}
}

func TestPlainCheck(t *testing.T) {
	for _, c := range []struct {
		p    Plain
		want string // "" for none
	}{
		{Plain{Fields: []string{"spec"}, KeepOld: true, Kinds: []string{"Pod"}}, ""},
		{Plain{KeepOld: true}, "KeepOld needs Fields"},
		{Plain{Fields: []string{"spec"}, DeleteOnly: true}, "fields [spec] can never change on Delete"},
		{Plain{Kinds: []string{"Pod", ""}}, "empty kind in Kinds"},
	} {
		err := c.p.Check("h")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Check(%+v) = %v; want nil", c.p, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), `handler "h": `+c.want)):
			t.Errorf("Check(%+v) = %v; want an error with %q", c.p, err, c.want)
		}
	}
}

func TestSettable(t *testing.T) {
	n := Names{"s": "slot", "h": "handler"}
	for _, tc := range []struct{ id, want string }{
		{"s", ""},                            // a slot of AddSlot's: settable
		{"h", "the slot is a handler's own"}, // set by what the handler returns
		{"none", "no such slot is registered"},
	} {
		err := n.Settable(tc.id)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Settable(%q) = %v, want %q", tc.id, err, tc.want)
		}
	}
}
