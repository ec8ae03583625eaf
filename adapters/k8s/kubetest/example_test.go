package kubetest_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// A test of an operator's module: the package's TestMain calls
// kubetest.Main(m), and each test asks for the shared server, installs its
// CRDs and works in its own namespace. The example needs a server, so go test
// compiles it without running it; TestStartInstallCreateStop runs the same
// steps (see "Examples need a server" in the package documentation).
func Example() {
	// func TestMain(m *testing.M) { kubetest.Main(m) }

	testWidget := func(t *testing.T) {
		env := kubetest.Shared(t)
		env.InstallCRDFiles(t, "testdata/crds") // e.g. config/crd/bases
		ns := env.Namespace(t)

		client, err := dynamic.NewForConfig(env.AdminConfig())
		if err != nil {
			t.Fatal(err)
		}
		widgets := schema.GroupVersionResource{Group: "kubetest.opbus.dev", Version: "v1", Resource: "widgets"}
		widget := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubetest.opbus.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1"},
			"spec":     map[string]any{"size": int64(3)},
		}}
		_, err = client.Resource(widgets).Namespace(ns).Create(t.Context(), widget, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// ... start the operator with env.AdminConfig() (or, to check its
		// RBAC, env.UserConfig(kubetest.OperatorUser) after applying its
		// roles) and poll until it has done its work.
	}
	_ = testWidget // in a real module: func TestWidget(t *testing.T) { ... }
}
