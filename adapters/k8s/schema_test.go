package k8s

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/openapitest"

	"github.com/opbus/opbus"
)

// TestSchemaCheck checks paths against the schema of a custom resource
// written as the API server publishes it (testdata/openapi-widgets.json):
// a path is refused only where the schema says its field cannot exist.
func TestSchemaCheck(t *testing.T) {
	data, err := os.ReadFile("testdata/openapi-widgets.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseOpenAPI(data)
	if err != nil {
		t.Fatal(err)
	}
	root := doc.kind("example.com", "v1", "Widget")
	if root == nil {
		t.Fatal("no schema of kind Widget")
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
		{"spec.bare-port", "" /* int-or-string, as a CRD's schema is published */},
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
		{"spec.bare-port.x", `spec.bare-port is an integer or string: nothing is below it`},
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

// fakeSchemas returns an OpenAPI client that serves
// testdata/openapi-widgets.json as the schema of example.com/v1 and no
// other; err, if not nil, is what it returns instead.
func fakeSchemas(t *testing.T, err error) openapi.ClientWithContext {
	data, rerr := os.ReadFile("testdata/openapi-widgets.json")
	if rerr != nil {
		t.Fatal(rerr)
	}
	return openapi.ToClientWithContext(openapitest.FakeClient{ForcedErr: err, PathsMap: map[string]openapi.GroupVersion{
		"apis/example.com/v1": openapitest.FakeGroupVersion{GVSpec: data},
	}})
}

// TestSchemaUnavailable checks that a schema the Source cannot read (the
// server refuses it, publishes none, or not for this kind yet) leaves the
// fields unchecked, with one log line, and that the same field is refused
// where the schema is known.
func TestSchemaUnavailable(t *testing.T) {
	subs := []opbus.Subscription{
		{ID: "a", Fields: []opbus.Path{opbus.MustParsePath("spec.verison")}},
		{ID: "b", Fields: []opbus.Path{opbus.MustParsePath("spec.sise")}},
	}
	widgetsRes := &resource{gvr: widgets, kind: "Widget", keyKind: "Widget.example.com"}
	podsRes := &resource{gvr: pods, kind: "Pod", keyKind: "Pod"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(`User "op" cannot get path "/openapi/v3"`))
	for _, tc := range []struct {
		name    string
		openapi openapi.ClientWithContext
		rs      []*resource
		want    string // "" for no error
		logs    int
	}{
		{"forbidden", fakeSchemas(t, forbidden), []*resource{widgetsRes}, "", 1},
		{"not published for this group version", fakeSchemas(t, nil), []*resource{podsRes}, "", 1},
		{"one kind of two unknown", fakeSchemas(t, nil), []*resource{widgetsRes, podsRes}, "", 1},
		{"known", fakeSchemas(t, nil), []*resource{widgetsRes}, `k8s: handler "a" subscribes to spec.verison, which no object can have: Widget.example.com (by the API server's schema of widgets in example.com/v1): spec has no field "verison": did you mean spec.version?`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			s := &Source{log: slog.New(slog.NewTextHandler(&logs, nil)), openapi: tc.openapi}
			err := s.checkFields(context.Background(), subs, tc.rs)
			if tc.want == "" && err != nil {
				t.Errorf("got %v, want no error", err)
			}
			if tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
				t.Errorf("got %v, want an error starting %q", err, tc.want)
			}
			if n := strings.Count(logs.String(), "no schema for some watched resources"); n != tc.logs {
				t.Errorf("logged %d times, want %d:\n%s", n, tc.logs, logs.String())
			}
		})
	}
}
