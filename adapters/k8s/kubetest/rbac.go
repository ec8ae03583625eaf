package kubetest

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// rbacResources are the kinds ApplyRBACFile creates.
var rbacResources = map[string]schema.GroupVersionResource{
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// ApplyRBACFile creates the objects of an operator's RBAC manifest (a
// YAML file of ServiceAccounts, Roles, ClusterRoles and their bindings,
// separated by "---" lines) with their rules as they are, so that a test
// can run the operator as user with those permissions and no others
// ([Env.UserConfig]): the namespaced objects go to ns, the cluster-scoped
// ones are named after ns (name-ns, and so are the bindings' references
// to them; removed at the end of the test), and every binding's subjects
// become user. Anything else in the file fails the
// test.
func (e *Env) ApplyRBACFile(t TB, path, ns, user string) {
	t.Helper()
	c, err := dynamic.NewForConfig(e.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("kubetest: %s: %v", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(j, &u.Object); err != nil {
			t.Fatalf("kubetest: %s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue // comments only
		}
		gvr, ok := rbacResources[u.GetKind()]
		if !ok {
			t.Fatalf("kubetest: %s: kind %q: want ServiceAccount, Role, ClusterRole, RoleBinding or ClusterRoleBinding", path, u.GetKind())
		}
		if _, ok := u.Object["subjects"]; ok {
			u.Object["subjects"] = []any{map[string]any{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}}
		}
		if kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind"); kind == "ClusterRole" {
			role, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
			_ = unstructured.SetNestedField(u.Object, role+"-"+ns, "roleRef", "name")
		}
		var api dynamic.ResourceInterface = c.Resource(gvr)
		if u.GetNamespace() != "" {
			u.SetNamespace(ns)
			api = c.Resource(gvr).Namespace(ns)
		} else {
			u.SetName(u.GetName() + "-" + ns)
			name := u.GetName()
			t.Cleanup(func() { _ = c.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
		if _, err := api.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("kubetest: %s: creating %s %s: %v", path, u.GetKind(), u.GetName(), err)
		}
	}
}
