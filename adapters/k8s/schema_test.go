package k8s

import (
	"os"
	"strings"
	"testing"

	"github.com/opbus/opbus"
)

// TestSchemaCheck checks paths against the schema of a custom resource
// written as the API server publishes it (testdata/openapi-gadgets.json):
// a path is refused only where the schema says its field cannot exist.
func TestSchemaCheck(t *testing.T) {
	data, err := os.ReadFile("testdata/openapi-gadgets.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseOpenAPI(data)
	if err != nil {
		t.Fatal(err)
	}
	root := doc.kind("example.com", "v1", "Gadget")
	if root == nil {
		t.Fatal("no schema of kind Gadget")
	}
	for _, tc := range []struct {
		path string
		want string // "" for a path that can exist; else what the reason says
	}{
		{"spec", ""},
		{"spec.version", ""},
		{"spec.members[name=a].role", "" /* a list element by key */},
		{"spec.members[*].role", ""},
		{"spec.members[0]", ""},
		{`spec.labels["app.kubernetes.io/name"]`, "" /* any key of a map */},
		{"spec.labels[*]", ""},
		{"spec.extra.anything.below", "" /* x-kubernetes-preserve-unknown-fields */},
		{"spec.port", "" /* int-or-string */},
		{"spec.template.metadata.name", "" /* an embedded resource's metadata */},
		{"spec.template.spec.image", ""},
		{"spec.raw.whatever", "" /* an object that names no field */},
		{"metadata.labels.app", ""},
		{`metadata.annotations["example.com/x"]`, ""},
		{"metadata.ownerReferences[*].uid", ""},
		{"status.conditions[type=Ready].status", "" /* through a $ref */},
		{"[*].phase", ""},

		{"spec.verison", `spec has no field "verison": did you mean spec.version? known: version,`},
		{"spce.version", `the object has no field "spce": did you mean spec? known: spec,`},
		{"metadata.lables.app", `metadata has no field "lables": did you mean metadata.labels?`},
		{"status.conditions[type=Ready].stauts", `status.conditions[type=Ready] has no field "stauts": did you mean status.conditions[type=Ready].status?`},
		{"spec.members[nmae=a]", `the elements of spec.members have no field "nmae" to match: did you mean name?`},
		{"spec.members.role", `spec.members is a list: address its elements with [*], [field=value] or [index]`},
		{"spec.size.value", `spec.size is an integer: nothing is below it`},
		{"spec.port.value", `spec.port is an integer or string: nothing is below it`},
		{"spec.labels.app.x", `spec.labels.app is a string: nothing is below it`},
		{"spec.tags[0].name", `spec.tags[0] is a string: nothing is below it`},
		{"spec.version[0]", `spec.version is a string: nothing is below it`},
		{"spec[0]", `spec is an object, not a list`},
		{"status[*].x", `no value of status can have x`},
		{"spec.template.spec.imag", `spec.template.spec has no field "imag": did you mean spec.template.spec.image?`},
		{"zzzzzzzz", `the object has no field "zzzzzzzz": known: kind, metadata, spec, status, apiVersion`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ferr := doc.check(root, opbus.MustParsePath(tc.path))
			switch {
			case tc.want == "" && ferr != nil:
				t.Errorf("refused: %s", ferr.reason)
			case tc.want != "" && ferr == nil:
				t.Errorf("accepted, want refused with %q", tc.want)
			case tc.want != "" && !strings.Contains(ferr.reason, tc.want):
				t.Errorf("got %q, want it to contain %q", ferr.reason, tc.want)
			}
		})
	}
}

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
		if got := nearest(tc.name, tc.known, 1); len(got) != 1 || got[0] != tc.want {
			t.Errorf("nearest(%q, %v) = %v, want %s", tc.name, tc.known, got, tc.want)
		}
	}
	if d := distance("kitten", "sitting"); d != 3 {
		t.Errorf("distance(kitten, sitting) = %d, want 3", d)
	}
}
