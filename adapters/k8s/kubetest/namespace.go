package kubetest

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespacePrefix starts the name of every namespace that
// [Env.Namespace] creates.
const NamespacePrefix = "opbus-test-"

// NamespaceLabel is a label on every namespace that [Env.Namespace]
// creates, so that leftovers on an existing cluster can be found:
//
//	kubectl delete namespace -l opbus-kubetest=test
const NamespaceLabel = "opbus-kubetest"

// Namespace creates a namespace with a unique name starting with
// [NamespacePrefix] and returns its name. The namespace is deleted when the
// test ends, without waiting: a server that kubetest started has no namespace
// controller, so the namespace stays Terminating.
func (e *Env) Namespace(t TB) string {
	t.Helper()
	core, err := e.coreClient()
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	ns, err := core.Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: NamespacePrefix,
			Labels:       map[string]string{NamespaceLabel: "test"},
			Annotations:  map[string]string{NamespaceLabel + "/test": t.Name()},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: create namespace: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is already canceled here.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := core.Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("kubetest: delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}
