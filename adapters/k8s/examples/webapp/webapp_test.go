package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// waitFor bounds each wait for the operator.
const waitFor = 30 * time.Second

// cluster is what a test of the operator works with.
type cluster struct {
	ns   string
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

func newCluster(t testing.TB) (*kubetest.Env, *cluster) {
	t.Helper()
	env := kubetest.Shared(t)
	env.InstallCRDFiles(t, "crd.yaml")
	cfg := env.AdminConfig()
	c := &cluster{ns: env.Namespace(t), dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg)}
	return env, c
}

// eventually polls cond until it returns "" (met) or waitFor passes; it
// then fails with cond's last word.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, waitFor, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) createWebApp(t kubetest.TB, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.opbus.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": name, "namespace": c.ns},
		"spec":     spec,
	}}
	got, err := c.dyn.Resource(webapps).Namespace(c.ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating WebApp %s: %v", name, err)
	}
	return got
}

func (c *cluster) webApp(t kubetest.TB, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := c.dyn.Resource(webapps).Namespace(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading WebApp %s: %v", name, err)
	}
	return obj
}

func (c *cluster) patchWebApp(t testing.TB, name, patch string) {
	t.Helper()
	if _, err := c.dyn.Resource(webapps).Namespace(c.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching WebApp %s with %s: %v", name, patch, err)
	}
}

// setReady writes a Deployment's status as the Deployment controller would
// once ready of its replicas are ready (there is no controller-manager).
func (c *cluster) setReady(t kubetest.TB, name string, replicas, ready int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"replicas":%d,"updatedReplicas":%d,"readyReplicas":%d,"availableReplicas":%d}}`, replicas, replicas, ready, ready)
	if _, err := c.kube.AppsV1().Deployments(c.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patching Deployment %s's status: %v", name, err)
	}
}

// condition returns the WebApp's condition of type typ, or nil.
func condition(obj *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// wantCondition returns "" when the WebApp's condition typ has status and
// its message contains msg.
func (c *cluster) wantCondition(t *testing.T, name, typ, status, msg string) func() string {
	return func() string {
		cond := condition(c.webApp(t, name), typ)
		if cond == nil {
			return "no " + typ + " condition"
		}
		if cond["status"] != status || !strings.Contains(fmt.Sprint(cond["message"]), msg) {
			return fmt.Sprintf("%s is %v (%v: %v), want %s with %q", typ, cond["status"], cond["reason"], cond["message"], status, msg)
		}
		return ""
	}
}

// resourceVersions returns the resource versions of the WebApp name and
// its children.
func (c *cluster) resourceVersions(t testing.TB, name string) string {
	t.Helper()
	d, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.kube.CoreV1().Services(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("WebApp %s, Deployment %s, Service %s", c.webApp(t, name).GetResourceVersion(), d.ResourceVersion, s.ResourceVersion)
}

// healthServer answers GETs with the code it holds.
func healthServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var code atomic.Int32
	code.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(code.Load()))
	}))
	t.Cleanup(srv.Close)
	return srv, &code
}

// TestWebApp runs the operator as a process against the real API server,
// through each thing it must do: children, updates once per change,
// readiness, health polls, no writes when nothing changes, a restart
// that re-runs nothing, and its metrics and probes.
func TestWebApp(t *testing.T) {
	env, c := newCluster(t)
	kubeconfig := env.WriteKubeconfig(t, nil)
	srv, code := healthServer(t)
	args := []string{"--debug", "--probe-interval=300ms", "--leader-elect", "--leader-election-namespace=" + c.ns}
	op := startOperator(t, kubeconfig, args...)

	eventually(t, "/readyz", func() string {
		if code, body := get(op.probes, "/readyz"); code != http.StatusOK {
			return fmt.Sprintf("%d %s", code, body)
		}
		return ""
	})
	app := c.createWebApp(t, "shop", map[string]any{"image": "nginx:1.27", "replicas": int64(2), "healthURL": srv.URL})

	// 1. The children, named after the WebApp, labelled and controlled by it.
	var dep *appsv1.Deployment
	eventually(t, "the Deployment", func() string {
		var err error
		if dep, err = c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
	checkChild(t, "Deployment", dep.ObjectMeta, app)
	if got := *dep.Spec.Replicas; got != 2 {
		t.Errorf("Deployment replicas = %d, want 2", got)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != "nginx:1.27" {
		t.Errorf("Deployment image = %q, want nginx:1.27", got)
	}
	var svc *corev1.Service
	eventually(t, "the Service", func() string {
		var err error
		if svc, err = c.kube.CoreV1().Services(c.ns).Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
	checkChild(t, "Service", svc.ObjectMeta, app)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 {
		t.Errorf("Service ports = %+v, want port 80", svc.Spec.Ports)
	}

	// 3. Readiness follows the Deployment's status.
	eventually(t, "Ready False with no ready replica", c.wantCondition(t, "shop", "Ready", "False", "0 of 2"))
	c.setReady(t, "shop", 2, 1)
	eventually(t, "status.readyReplicas 1", func() string {
		n, _, _ := unstructured.NestedInt64(c.webApp(t, "shop").Object, "status", "readyReplicas")
		if n != 1 {
			return fmt.Sprintf("status.readyReplicas = %d", n)
		}
		return ""
	})
	eventually(t, "Ready False with 1 of 2", c.wantCondition(t, "shop", "Ready", "False", "1 of 2"))
	c.setReady(t, "shop", 2, 2)
	eventually(t, "Ready True with 2 of 2", c.wantCondition(t, "shop", "Ready", "True", "2 of 2"))

	// 4. Health polls change conditions with no change to any object.
	eventually(t, "Health True", c.wantCondition(t, "shop", "Health", "True", "200"))
	code.Store(http.StatusServiceUnavailable)
	eventually(t, "Health False naming 503", c.wantCondition(t, "shop", "Health", "False", "503"))
	code.Store(http.StatusOK)
	eventually(t, "Health True again", c.wantCondition(t, "shop", "Health", "True", "200"))

	// 2. A change of spec.image updates the Deployment, once.
	gen := deploymentGeneration(t, c, "shop")
	c.patchWebApp(t, "shop", `{"spec":{"image":"nginx:1.28"}}`)
	eventually(t, "the Deployment's new image", func() string {
		d, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), "shop", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
			return "image " + img
		}
		return ""
	})
	c.setReady(t, "shop", 2, 2)
	// 5. Then nothing is written: no loop, no no-op patch, while the health
	// poll runs every 300ms.
	time.Sleep(time.Second) // let what is in flight land
	before := c.resourceVersions(t, "shop")
	time.Sleep(3 * time.Second)
	if after := c.resourceVersions(t, "shop"); after != before {
		t.Errorf("objects written with nothing changed: before %s, after %s", before, after)
	}
	if got := deploymentGeneration(t, c, "shop"); got != gen+1 {
		t.Errorf("Deployment generation %d after one image change, want %d: the Deployment was updated %d times", got, gen+1, got-gen)
	}

	// 6. Metrics and probes on the flags.
	if code, body := get(op.probes, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	for _, h := range []string{"workload", "ready", "health"} {
		if n := op.metric(t, "opbus_handler_runs_total", fmt.Sprintf("handler=%q", h)); n < 1 {
			t.Errorf("opbus_handler_runs_total{handler=%q} = %v, want ≥ 1", h, n)
		}
	}
	// The manager's own metrics are served next to opbus's: one registry.
	if n := op.metric(t, "rest_client_requests_total"); n < 1 {
		t.Errorf("rest_client_requests_total = %v: controller-runtime's metrics are missing next to opbus's", n)
	}

	// 5. A restart re-runs nothing that was handled and writes nothing.
	op.stop(t)
	before = c.resourceVersions(t, "shop")
	op2 := startOperator(t, kubeconfig, args...)
	eventually(t, "/readyz after the restart", func() string {
		if code, body := get(op2.probes, "/readyz"); code != http.StatusOK {
			return fmt.Sprintf("%d %s", code, body)
		}
		return ""
	})
	eventually(t, "a health poll after the restart", func() string {
		if n := op2.metric(t, "opbus_handler_runs_total", `handler="health"`); n < 2 {
			return fmt.Sprintf("%v health runs", n)
		}
		return ""
	})
	for _, h := range []string{"workload", "ready"} {
		if n := op2.metric(t, "opbus_handler_runs_total", fmt.Sprintf("handler=%q", h)); n != 0 {
			t.Errorf("after the restart, %s ran %v times, want 0", h, n)
		}
	}
	if after := c.resourceVersions(t, "shop"); after != before {
		t.Errorf("objects written by the restart: before %s, after %s", before, after)
	}

	// A child deleted by hand is created again.
	if err := c.kube.CoreV1().Services(c.ns).Delete(context.Background(), "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Service created again", func() string {
		if _, err := c.kube.CoreV1().Services(c.ns).Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
}

// checkChild checks a child's name, label and controller owner reference.
func checkChild(t *testing.T, kind string, meta metav1.ObjectMeta, app *unstructured.Unstructured) {
	t.Helper()
	if meta.Labels["app"] != app.GetName() {
		t.Errorf("%s labels = %v, want app: %s", kind, meta.Labels, app.GetName())
	}
	ref := metav1.GetControllerOf(&meta)
	if ref == nil || ref.UID != app.GetUID() || ref.Kind != "WebApp" || ref.APIVersion != "example.opbus.dev/v1" {
		t.Errorf("%s controller = %+v, want WebApp %s (uid %s)", kind, ref, app.GetName(), app.GetUID())
	}
}

func deploymentGeneration(t *testing.T, c *cluster, name string) int64 {
	t.Helper()
	d, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Generation
}
