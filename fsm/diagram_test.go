package fsm_test

import (
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

// awkwardSpec has names Mermaid cannot take as identifiers, one of them
// colliding with the first alias tried, and a retired state.
func awkwardSpec() fsm.Spec {
	return fsm.Spec{
		Name:    "rollout",
		Initial: "s1",
		States: []fsm.State{
			{Name: "s1"},
			{Name: "crash-loop", Status: opbus.ErrorStatus("crash loop")},
			{Name: "v1.2"},
			{Name: "old", Retired: true, Status: opbus.Blocked("old")},
		},
		Triggers: []fsm.Trigger{
			{Name: "crash", Src: []string{"s1", "v1.2"}, Dst: "crash-loop"},
			{Name: "upgrade", Src: []string{"crash-loop"}, Dst: "v1.2"},
			{Name: "migrate", Src: []string{"old"}, Dst: "s1"},
		},
	}
}

func TestDiagrams(t *testing.T) {
	tests := []struct {
		name string
		spec fsm.Spec
		draw func(*fsm.Machine) string
		want string
	}{{
		name: "mermaid with aliases and a retired state",
		spec: awkwardSpec(),
		draw: (*fsm.Machine).Mermaid,
		want: `stateDiagram-v2
    state "crash-loop" as s1_
    state "v1.2" as s2
    [*] --> s1
    s1_ : error
    old : blocked, retired
    s1 --> s1_ : crash
    s2 --> s1_ : crash
    s1_ --> s2 : upgrade
    old --> s1 : migrate
`,
	}, {
		name: "graphviz",
		spec: podSpec(),
		draw: (*fsm.Machine).Graphviz,
		want: `digraph "lifecycle" {
	rankdir=LR;
	node [shape=box, style=rounded];
	"[*]" [shape=point];
	"pending" [label="pending\nwaiting"];
	"running" [label="running\nactive"];
	"failed" [label="failed\nblocked"];
	"[*]" -> "pending";
	"pending" -> "running" [label="start"];
	"running" -> "failed" [label="crash"];
	"failed" -> "running" [label="recover"];
}
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := fsm.New(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.draw(m); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			// Deterministic: the same spec draws the same, every time.
			for range 20 {
				again, err := fsm.New(tt.spec)
				if err != nil {
					t.Fatal(err)
				}
				if got := tt.draw(again); got != tt.want {
					t.Fatalf("a second machine drew\n%s", got)
				}
			}
		})
	}
}
