package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// rbacResources are the kinds rbac.yaml holds.
var rbacResources = map[string]schema.GroupVersionResource{
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// applyRBAC creates the objects of rbac.yaml, their rules untouched, with
// the namespaced ones in ns, the cluster-scoped ones renamed after ns, and
// every binding's subject replaced by user.
func applyRBAC(t *testing.T, c dynamic.Interface, ns, user string) {
	t.Helper()
	data, err := os.ReadFile("rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(j, &u.Object); err != nil {
			t.Fatal(err)
		}
		gvr, ok := rbacResources[u.GetKind()]
		if !ok {
			t.Fatalf("rbac.yaml: unexpected kind %s", u.GetKind())
		}
		if _, ok := u.Object["subjects"]; ok {
			u.Object["subjects"] = []any{map[string]any{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}}
		}
		var api dynamic.ResourceInterface = c.Resource(gvr)
		if u.GetNamespace() != "" {
			u.SetNamespace(ns)
			api = c.Resource(gvr).Namespace(ns)
		} else {
			u.SetName(u.GetName() + "-" + ns)
			if u.GetKind() == "ClusterRoleBinding" {
				_ = unstructured.SetNestedField(u.Object, u.GetName(), "roleRef", "name")
			}
			name := u.GetName()
			t.Cleanup(func() { _ = c.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
		if _, err := api.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// TestRBAC runs the operator as a user with no permission but those
// rbac.yaml grants: it creates the children, writes the WebApp's status
// and conditions, emits Events and leads, and nothing it does is refused.
func TestRBAC(t *testing.T) {
	env, c := newCluster(t)
	user := env.UserConfig(kubetest.OperatorUser)
	userDyn := dynamic.NewForConfigOrDie(user)
	if _, err := userDyn.Resource(webapps).Namespace(c.ns).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("before rbac.yaml, listing WebApps as %s: got %v, want Forbidden", kubetest.OperatorUser, err)
	}
	applyRBAC(t, dynamic.NewForConfigOrDie(env.AdminConfig()), c.ns, kubetest.OperatorUser)
	eventually(t, "the authorizer knows the bindings", func() string {
		_, err := userDyn.Resource(webapps).Namespace(c.ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		return ""
	})
	srv, _ := healthServer(t)
	op := startOperator(t, env.WriteKubeconfig(t, user), "--probe-interval=300ms", "--leader-elect", "--leader-election-namespace="+c.ns)
	c.createWebApp(t, "shop", map[string]any{"image": "nginx:1.27", "replicas": int64(1), "healthURL": srv.URL})
	eventually(t, "the Deployment", func() string {
		if _, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
	c.setReady(t, "shop", 1, 1)
	eventually(t, "Ready True", c.wantCondition(t, "shop", "Ready", "True", "1 of 1"))
	eventually(t, "Health True", c.wantCondition(t, "shop", "Health", "True", "200"))
	eventually(t, "the Service", func() string {
		if _, err := c.kube.CoreV1().Services(c.ns).Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
	if code, body := get(op.probes, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
	for _, word := range []string{"forbidden", "Forbidden"} {
		if log := op.logText(); strings.Contains(log, word) {
			t.Errorf("the operator was refused something (%q in its log):\n%s", word, log)
			break
		}
	}
}
