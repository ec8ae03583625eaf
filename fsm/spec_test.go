package fsm_test

import (
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *fsm.Spec)
		want   []string // substrings of the error; none for a valid spec
	}{
		{"valid", func(*fsm.Spec) {}, nil},
		{"empty machine name", func(s *fsm.Spec) { s.Name = "" }, []string{`machine "": machine name: empty name`}},
		{"malformed machine name", func(s *fsm.Spec) { s.Name = "pod life" }, []string{`name "pod life": ' ' is not allowed`}},
		{"no states", func(s *fsm.Spec) { s.States, s.Triggers = nil, nil }, []string{"no states declared", `initial state "idle" is not a declared state`}},
		{"empty state name", func(s *fsm.Spec) { s.States[1].Name = "" }, []string{"state #2: empty name"}},
		{"state declared twice", func(s *fsm.Spec) { s.States[2].Name = "queued" }, []string{`state "queued" declared twice`}},
		{"no initial state", func(s *fsm.Spec) { s.Initial = "" }, []string{"no initial state"}},
		{"undeclared initial state", func(s *fsm.Spec) { s.Initial = "idel" }, []string{`initial state "idel" is not a declared state (declared: idle, queued, running, done, failed)`}},
		{"retired initial state", func(s *fsm.Spec) { s.States[0].Retired = true }, []string{`initial state "idle" is retired`}},
		{"empty event name", func(s *fsm.Spec) { s.Triggers[3].Name = "" }, []string{"trigger #4: empty name"}},
		{"event declared twice", func(s *fsm.Spec) { s.Triggers[3].Name = "start" }, []string{`trigger "start" declared twice`}},
		{"no sources", func(s *fsm.Spec) { s.Triggers[0].Src = nil }, []string{`trigger "submit": no source states`}},
		{"undeclared source", func(s *fsm.Spec) { s.Triggers[4].Src[1] = "runing" }, []string{`trigger "fail": source "runing" is not a declared state`}},
		{"source listed twice", func(s *fsm.Spec) { s.Triggers[4].Src[1] = "queued" }, []string{`trigger "fail": source "queued" listed twice`}},
		{"no destination", func(s *fsm.Spec) { s.Triggers[3].Dst = "" }, []string{`trigger "finish": no destination state`}},
		{"undeclared destination", func(s *fsm.Spec) { s.Triggers[3].Dst = "dnoe" }, []string{`trigger "finish": destination "dnoe" is not a declared state`}},
		{"retired destination", func(s *fsm.Spec) { s.States[3].Retired = true }, []string{`trigger "finish": destination "done" is retired`}},
		{"empty kind", func(s *fsm.Spec) { s.Kinds = []string{"Job", ""} }, []string{"kind #2 is empty"}},
		{"unreachable states", func(s *fsm.Spec) {
			s.States = append(s.States, fsm.State{Name: "archived"}, fsm.State{Name: "purged"})
			s.Triggers = append(s.Triggers, fsm.Trigger{Name: "purge", Src: []string{"archived"}, Dst: "purged"})
		}, []string{`states archived, purged cannot be reached from the initial state "idle"`, "Retired"}},
		{"a retired state need not be reachable", func(s *fsm.Spec) {
			s.States = append(s.States, fsm.State{Name: "legacy", Retired: true})
			s.Triggers = append(s.Triggers, fsm.Trigger{Name: "migrate", Src: []string{"legacy"}, Dst: "queued"})
		}, nil},
		{"every problem is reported", func(s *fsm.Spec) {
			s.Triggers[0].Dst = "x"
			s.Triggers[1].Src = []string{"y"}
		}, []string{`trigger "submit": destination "x"`, `trigger "start": source "y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := jobSpec()
			tt.change(&spec)
			m, err := fsm.New(spec)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if m.Name() != spec.Name {
					t.Errorf("got name %q, want %q", m.Name(), spec.Name)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fsm: machine ") {
					t.Errorf("error line %q does not start with \"fsm: machine \"", line)
				}
			}
		})
	}
}

// New keeps a copy of the spec: changing the caller's slices afterwards
// changes nothing.
func TestNewCopiesSpec(t *testing.T) {
	spec := jobSpec()
	m, err := fsm.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	before := m.Mermaid()
	spec.States[1].Name = "changed"
	spec.States[1].Status = opbus.ErrorStatus("changed")
	spec.Triggers[0].Src[0] = "changed"
	if after := m.Mermaid(); after != before {
		t.Errorf("the machine changed with its spec:\n%s\nwant\n%s", after, before)
	}
}
