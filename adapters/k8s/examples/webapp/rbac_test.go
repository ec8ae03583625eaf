package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

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
	env.ApplyRBACFile(t, "rbac.yaml", c.ns, kubetest.OperatorUser)
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
