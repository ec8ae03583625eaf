package kubetest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestReadCRDFiles(t *testing.T) {
	tmp := t.TempDir()
	badYAML := filepath.Join(tmp, "bad.yaml")
	if err := os.WriteFile(badYAML, []byte("apiVersion: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	onlyComments := filepath.Join(tmp, "comments.yaml")
	if err := os.WriteFile(onlyComments, []byte("# nothing\n---\n# still nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		paths   []string
		want    []string // CRD names, in order
		wantErr string   // part of the error; "" for none
	}{
		{name: "a directory: its manifests in name order, other files skipped",
			paths: []string{"testdata/crds"},
			want:  []string{"gadgets.kubetest.opbus.dev", "widgets.kubetest.opbus.dev", "sprockets.kubetest.opbus.dev"}},
		{name: "a YAML file with a comment document and two CRDs",
			paths: []string{"testdata/crds/widgets.yaml"},
			want:  []string{"widgets.kubetest.opbus.dev", "sprockets.kubetest.opbus.dev"}},
		{name: "files in the order given",
			paths: []string{"testdata/crds/widgets.yaml", "testdata/crds/gadgets.json"},
			want:  []string{"widgets.kubetest.opbus.dev", "sprockets.kubetest.opbus.dev", "gadgets.kubetest.opbus.dev"}},
		{name: "a missing path is named", paths: []string{"testdata/nope"}, wantErr: "testdata/nope"},
		{name: "another kind is refused, naming file, document and kind",
			paths: []string{"testdata/notcrd"}, wantErr: `kustomization.yaml: document 1: apiVersion "kustomize.config.k8s.io/v1beta1" kind "Kustomization"`},
		{name: "a directory without manifests is an error", paths: []string{"testdata/empty"}, wantErr: "has no .yaml"},
		{name: "a file that does not parse is named", paths: []string{badYAML}, wantErr: "bad.yaml: document 1"},
		{name: "a file without any CRD is an error", paths: []string{onlyComments}, wantErr: "no CustomResourceDefinition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readCRDFiles(tt.paths)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range got {
				names = append(names, u.GetName())
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("got %q, want %q", names, tt.want)
			}
		})
	}
}

func TestCRDObject(t *testing.T) {
	crd := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(crdAPIVersion)
		u.SetKind(crdKind)
		u.SetName("things.example.com")
		return u
	}
	fromServer := crd()
	fromServer.SetResourceVersion("42")
	fromServer.SetUID("abc")
	fromServer.Object["status"] = map[string]any{"conditions": []any{}}
	noName := crd()
	noName.SetName("")
	tests := []struct {
		name    string
		obj     runtime.Object
		wantErr string
	}{
		{name: "an unstructured CRD", obj: crd()},
		{name: "one read from a server loses what an apply must not carry", obj: fromServer},
		{name: "nil", obj: nil, wantErr: "nil"},
		{name: "another kind", obj: &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "x"}}, wantErr: `kind "ConfigMap"`},
		{name: "an unstructured object without kind is not taken as a CRD", obj: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}, wantErr: `kind ""`},
		{name: "a CRD without a name", obj: noName, wantErr: "without metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := crdObject(tt.obj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.GetName() != "things.example.com" || got.GetResourceVersion() != "" || got.GetUID() != "" || got.Object["status"] != nil {
				t.Errorf("got %v, want the name only in metadata and no status", got.Object)
			}
		})
	}
}

// CustomResourceDefinition stands in for the typed CRD of
// k8s.io/apiextensions-apiserver, a module kubetest does not require: like
// it, it has that name and is built without apiVersion and kind.
type CustomResourceDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (c *CustomResourceDefinition) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// TestCRDObjectTyped checks that a typed CRD without apiVersion and kind,
// as Go code builds one, is taken as one, and another typed object is not.
func TestCRDObjectTyped(t *testing.T) {
	got, err := crdObject(&CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetAPIVersion() != crdAPIVersion || got.GetKind() != crdKind {
		t.Errorf("got %s %s, want %s %s", got.GetAPIVersion(), got.GetKind(), crdAPIVersion, crdKind)
	}
	_, err = crdObject(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"}})
	if err == nil {
		t.Errorf("a ConfigMap without apiVersion and kind: got no error, want one")
	}
}

// TestInstallCRDsNamesNotAccepted checks that a CRD whose names the server
// refuses fails the install at once with the server's reason, instead of
// waiting for the time-out: here a second CRD in a group claims the kind of
// the first.
func TestInstallCRDsNamesNotAccepted(t *testing.T) {
	env := Shared(t)
	crd := func(plural string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": crdAPIVersion, "kind": crdKind,
			"metadata": map[string]any{"name": plural + ".conflict.kubetest.opbus.dev"},
			"spec": map[string]any{
				"group": "conflict.kubetest.opbus.dev", "scope": "Namespaced",
				"names": map[string]any{"plural": plural, "kind": "Part"},
				"versions": []any{map[string]any{
					"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{
						"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				}},
			},
		}}
	}
	if err := env.installCRDs(t.Context(), []*unstructured.Unstructured{crd("parts")}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	err := env.installCRDs(t.Context(), []*unstructured.Unstructured{crd("pieces")})
	if err == nil || !strings.Contains(err.Error(), "names not accepted") || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("got error %v, want names not accepted: already in use", err)
	}
	if took := time.Since(begin); took > crdTimeout/2 {
		t.Errorf("took %v, want a failure well before the %v time-out", took, crdTimeout)
	}
}
