package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// TestWithAPIServer: a user's module runs its tests against a real API
// server with the released kubetest, as its package documentation says:
// install a CRD, create an object of it in the test's namespace, read it
// back. It skips without a server (fails under CI=true); the repository's
// scripts/test passes OPBUS_KUBE_BIN through.
func TestWithAPIServer(t *testing.T) {
	env := kubetest.Shared(t)
	env.InstallCRDs(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "backups.consumer.example.com"},
		"spec": map[string]any{
			"group": "consumer.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "backups", "kind": "Backup"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}})
	ns := env.Namespace(t)
	client, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	backups := client.Resource(schema.GroupVersionResource{Group: "consumer.example.com", Version: "v1", Resource: "backups"}).Namespace(ns)
	_, err = backups.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "consumer.example.com/v1", "kind": "Backup",
		"metadata": map[string]any{"name": "nightly"},
		"spec":     map[string]any{"schedule": "0 3 * * *"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create backup: %v", err)
	}
	got, err := backups.Get(t.Context(), "nightly", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get backup: %v", err)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "spec", "schedule"); s != "0 3 * * *" {
		t.Errorf("spec.schedule %q, want %q", s, "0 3 * * *")
	}
}
