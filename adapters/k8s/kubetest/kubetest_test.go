package kubetest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// waitTimeout bounds every wait for the server or an informer.
const waitTimeout = 30 * time.Second

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// TestPodStatusPatchSeenByInformer checks what the adapter relies on: a patch
// of a Pod's status subresource reaches a dynamic informer as MODIFIED.
func TestPodStatusPatchSeenByInformer(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	if !strings.HasPrefix(ns, kubetest.NamespacePrefix) {
		t.Errorf("namespace %q, want prefix %q", ns, kubetest.NamespacePrefix)
	}
	core := newCore(t, env.AdminConfig())
	updates := watchPods(t, env.AdminConfig(), ns)

	pod := createPod(t, core, ns, "crashing")
	patch := `{"status":{"containerStatuses":[{"name":"app","image":"busybox:1.36","imageID":"",` +
		`"ready":false,"restartCount":0,"state":{"terminated":{"exitCode":1,"reason":"Error"}}}]}}`
	_, err := core.Pods(ns).Patch(t.Context(), pod.Name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("patch status: %v", err)
	}

	timeout := time.After(waitTimeout)
	for {
		select {
		case ev := <-updates:
			if ev.kind != "MODIFIED" || ev.obj.GetName() != pod.Name {
				continue
			}
			exitCode, reason, ok := terminated(ev.obj)
			if !ok {
				continue
			}
			if exitCode != 1 || reason != "Error" {
				t.Fatalf("terminated exitCode %d reason %q, want 1 %q", exitCode, reason, "Error")
			}
			return
		case <-timeout:
			t.Fatalf("no MODIFIED event with a terminated container within %v", waitTimeout)
		}
	}
}

// TestRestartAPIServer checks that the data survives a restart of
// kube-apiserver and that an informer started before it recovers.
func TestRestartAPIServer(t *testing.T) {
	env := kubetest.Start(t) // its own server: a restart would disturb other tests
	ns := env.Namespace(t)
	core := newCore(t, env.AdminConfig())
	events := watchPods(t, env.AdminConfig(), ns)

	env.RestartAPIServer(t)

	if _, err := core.Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace after restart: %v", err)
	}
	if _, err := core.Pods(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list pods after restart: %v", err)
	}
	pod := createPod(t, core, ns, "after-restart")
	timeout := time.After(2 * waitTimeout) // the informer re-watches with a back-off
	for {
		select {
		case ev := <-events:
			if ev.kind == "ADDED" && ev.obj.GetName() == pod.Name {
				return
			}
		case <-timeout:
			t.Fatalf("informer did not see pod %s created after the restart within %v", pod.Name, 2*waitTimeout)
		}
	}
}

// TestOperatorUser checks that the non-admin user has no groups and no
// permissions until a role is bound to it.
func TestOperatorUser(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	userCfg := env.UserConfig(kubetest.OperatorUser)

	authn, err := authnv1client.NewForConfig(userCfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := authn.SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self subject review: %v", err)
	}
	info := review.Status.UserInfo
	if info.Username != kubetest.OperatorUser || strings.Join(info.Groups, ",") != "system:authenticated" {
		t.Errorf("user %q groups %q, want %q [system:authenticated]", info.Username, info.Groups, kubetest.OperatorUser)
	}

	user := newCore(t, userCfg)
	_, err = user.Pods(ns).List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("list pods as %s: got %v, want Forbidden", kubetest.OperatorUser, err)
	}

	// A Role bound to the user lets it list pods.
	rbac, err := rbacv1client.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, err = rbac.Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create role: %v", err)
	}
	_, err = rbac.RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kubetest.OperatorUser}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create role binding: %v", err)
	}
	// The authorizer learns of the binding through its own informer.
	deadline := time.Now().Add(waitTimeout)
	for {
		_, err = user.Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("list pods as %s after binding a role: %v", kubetest.OperatorUser, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var widgetsResource = schema.GroupVersionResource{Group: "kubetest.opbus.dev", Version: "v1", Resource: "widgets"}

// TestStartInstallCreateStop is what a user's test does: start a server,
// install CRDs from a directory, create an object of one of them, and
// stop. The object is checked against the CRD's schema, which shows that the
// server uses the installed definition; once the test's server has stopped,
// its address refuses connections.
func TestStartInstallCreateStop(t *testing.T) {
	var cfg *rest.Config
	t.Run("server", func(t *testing.T) {
		env := kubetest.Start(t)
		cfg = env.AdminConfig()
		env.InstallCRDFiles(t, "testdata/crds")
		ns := env.Namespace(t)
		client, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		widgets := client.Resource(widgetsResource).Namespace(ns)
		widget := func(name string, size int64) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "kubetest.opbus.dev/v1", "kind": "Widget",
				"metadata": map[string]any{"name": name},
				"spec":     map[string]any{"size": size},
			}}
		}
		// Created at once after InstallCRDFiles: no wait in between.
		got, err := widgets.Create(t.Context(), widget("small", 3), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create widget: %v", err)
		}
		if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
			t.Errorf("spec.size %d, want 3", size)
		}
		_, err = widgets.Create(t.Context(), widget("empty", 0), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("create widget with size 0: got %v, want Invalid (the CRD's minimum is 1)", err)
		}
		// Every served version of every CRD in the directory is served.
		for _, gvr := range []schema.GroupVersionResource{
			{Group: "kubetest.opbus.dev", Version: "v1", Resource: "sprockets"},
			{Group: "kubetest.opbus.dev", Version: "v1", Resource: "gadgets"},
			{Group: "kubetest.opbus.dev", Version: "v1alpha1", Resource: "gadgets"},
		} {
			if _, err := client.Resource(gvr).List(t.Context(), metav1.ListOptions{}); err != nil {
				t.Errorf("list %s: %v", gvr, err)
			}
		}
	})
	if cfg == nil {
		return // the subtest skipped or failed before starting
	}
	core := newCore(t, cfg)
	if _, err := core.Namespaces().List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Errorf("the server at %s still answers after its test ended", cfg.Host)
	}
}

// TestInstallCRDsAgain checks that installing CRDs is idempotent, also from
// parallel tests on a shared server, and that a changed definition is
// applied.
func TestInstallCRDsAgain(t *testing.T) {
	env := kubetest.Shared(t)
	crd := func(maxSize int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "things.again.kubetest.opbus.dev"},
			"spec": map[string]any{
				"group": "again.kubetest.opbus.dev", "scope": "Namespaced",
				"names": map[string]any{"plural": "things", "kind": "Thing"},
				"versions": []any{map[string]any{
					"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{
						"type": "object", "properties": map[string]any{"spec": map[string]any{
							"type": "object", "properties": map[string]any{"size": map[string]any{
								"type": "integer", "maximum": maxSize}}}}}},
				}},
			},
		}}
	}
	t.Run("parallel", func(t *testing.T) {
		for i := range 3 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				env.InstallCRDs(t, crd(10))
			})
		}
	})
	ns := env.Namespace(t)
	client, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	things := client.Resource(schema.GroupVersionResource{Group: "again.kubetest.opbus.dev", Version: "v1", Resource: "things"}).Namespace(ns)
	thing := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "again.kubetest.opbus.dev/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "big"}, "spec": map[string]any{"size": int64(20)},
	}}
	if _, err := things.Create(t.Context(), thing, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("create size 20 under maximum 10: got %v, want Invalid", err)
	}
	env.InstallCRDs(t, crd(100))
	// The new schema reaches the server's validation a moment after the
	// CRD is updated.
	deadline := time.Now().Add(waitTimeout)
	for {
		_, err := things.Create(t.Context(), thing, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsInvalid(err) || time.Now().After(deadline) {
			t.Fatalf("create size 20 under maximum 100: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// podEvent is a watch event seen by an informer.
type podEvent struct {
	kind string // ADDED, MODIFIED or DELETED
	obj  *unstructured.Unstructured
}

// watchPods starts a dynamic informer on the pods of ns, waits for its
// cache to sync, and returns its events. It stops when the test ends.
func watchPods(t *testing.T, cfg *rest.Config, ns string) <-chan podEvent {
	t.Helper()
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, ns, nil)
	informer := factory.ForResource(podsResource).Informer()
	events := make(chan podEvent, 100)
	send := func(kind string, obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		select {
		case events <- podEvent{kind, u}:
		case <-t.Context().Done():
		}
	}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send("ADDED", obj) },
		UpdateFunc: func(_, obj any) { send("MODIFIED", obj) },
		DeleteFunc: func(obj any) { send("DELETED", obj) },
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(t.Context().Done())
	t.Cleanup(factory.Shutdown) // after t.Context is canceled
	if !cache.WaitForCacheSync(t.Context().Done(), informer.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	return events
}

// createPod creates a Pod with one container and no node in ns.
func createPod(t *testing.T, core corev1client.CoreV1Interface, ns, name string) *corev1.Pod {
	t.Helper()
	pod, err := core.Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "app", Image: "busybox:1.36"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	return pod
}

// newCore returns a client for the core API group.
func newCore(t *testing.T, cfg *rest.Config) corev1client.CoreV1Interface {
	t.Helper()
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return core
}

// terminated returns the exit code and reason of the first container's
// terminated state, and reports whether there is one.
func terminated(pod *unstructured.Unstructured) (exitCode int64, reason string, ok bool) {
	statuses, _, _ := unstructured.NestedSlice(pod.Object, "status", "containerStatuses")
	if len(statuses) == 0 {
		return 0, "", false
	}
	first, _ := statuses[0].(map[string]any)
	state, found, _ := unstructured.NestedMap(first, "state", "terminated")
	if !found {
		return 0, "", false
	}
	exitCode, _, _ = unstructured.NestedInt64(state, "exitCode")
	reason, _, _ = unstructured.NestedString(state, "reason")
	return exitCode, reason, true
}

// TestThousandServices creates 1,000 Services with a ClusterIP, more than a /24
// service range holds (254), in a server that kubetest started: its range
// fits thousands. A server found through a kubeconfig has a range of its
// own, which the test does not judge.
func TestThousandServices(t *testing.T) {
	if os.Getenv(kubetest.KubeconfigVar) != "" {
		t.Skipf("%s is set: the cluster's service range is its own", kubetest.KubeconfigVar)
	}
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	core, err := corev1client.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	ips := map[string]bool{}
	for i := range n {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
		got, err := core.Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("Service %d of %d (range %s): %v", i+1, n, kubetest.ServiceClusterIPRange, err)
		}
		if ips[got.Spec.ClusterIP] {
			t.Fatalf("Service %d got ClusterIP %s twice", i+1, got.Spec.ClusterIP)
		}
		ips[got.Spec.ClusterIP] = true
	}
}
