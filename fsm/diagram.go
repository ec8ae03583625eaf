package fsm

import (
	"fmt"
	"strings"
)

// Mermaid returns the machine as a Mermaid state diagram (stateDiagram-v2),
// for documentation: the initial state, each state with the level of its
// Status, and one arrow per source of each trigger, labelled with the
// event. The output depends only on the spec, in declaration order.
func (m *Machine) Mermaid() string {
	ids := m.mermaidIDs()
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	for _, st := range m.spec.States {
		if ids[st.Name] != st.Name {
			fmt.Fprintf(&b, "    state %q as %s\n", st.Name, ids[st.Name])
		}
	}
	fmt.Fprintf(&b, "    [*] --> %s\n", ids[m.spec.Initial])
	for _, st := range m.spec.States {
		if d := describe(st); d != "" {
			fmt.Fprintf(&b, "    %s : %s\n", ids[st.Name], d)
		}
	}
	for _, t := range m.spec.Triggers {
		for _, src := range t.Src {
			fmt.Fprintf(&b, "    %s --> %s : %s\n", ids[src], ids[t.Dst], t.Name)
		}
	}
	return b.String()
}

// mermaidIDs maps state names to Mermaid identifiers: the name itself when
// Mermaid can read it as one, else an alias that no state has.
func (m *Machine) mermaidIDs() map[string]string {
	ids := make(map[string]string, len(m.spec.States))
	for i, st := range m.spec.States {
		if plainID(st.Name) {
			ids[st.Name] = st.Name
			continue
		}
		alias := fmt.Sprintf("s%d", i)
		for m.states[alias] != nil {
			alias += "_"
		}
		ids[st.Name] = alias
	}
	return ids
}

// plainID reports whether s is an ASCII identifier.
func plainID(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// describe returns what a diagram says of a state besides its name.
func describe(st State) string {
	var parts []string
	if !st.Status.IsZero() {
		parts = append(parts, st.Status.Level.String())
	}
	if st.Retired {
		parts = append(parts, "retired")
	}
	return strings.Join(parts, ", ")
}

// Graphviz returns the machine as a Graphviz digraph in the DOT language,
// with the same content as [Machine.Mermaid]. The output depends only on
// the spec, in declaration order.
func (m *Machine) Graphviz() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n", m.spec.Name)
	b.WriteString("\trankdir=LR;\n")
	b.WriteString("\tnode [shape=box, style=rounded];\n")
	// "[*]" cannot be a state's name, so the start marker has its own node.
	b.WriteString("\t\"[*]\" [shape=point];\n")
	for _, st := range m.spec.States {
		label := st.Name
		if d := describe(st); d != "" {
			label += "\n" + d
		}
		fmt.Fprintf(&b, "\t%q [label=%q];\n", st.Name, label)
	}
	fmt.Fprintf(&b, "\t\"[*]\" -> %q;\n", m.spec.Initial)
	for _, t := range m.spec.Triggers {
		for _, src := range t.Src {
			fmt.Fprintf(&b, "\t%q -> %q [label=%q];\n", src, t.Dst, t.Name)
		}
	}
	b.WriteString("}\n")
	return b.String()
}
