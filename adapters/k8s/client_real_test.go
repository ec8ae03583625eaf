package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestClientAppliesChildren: a Widget handler applies a ConfigMap named
// after the Widget (a typed object) with Client.Apply. The ConfigMap gets
// a controller owner reference to the Widget; a run on a change the
// ConfigMap does not depend on sends no request (counted by the Source
// and on the wire); a change of spec.size updates the ConfigMap with one
// request; a field the handler stops applying is removed.
func TestClientAppliesChildren(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var w applies
	opts := k8s.Options{Config: w.wrap(env.AdminConfig()), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}, Status: k8s.StatusAnnotation},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Owned: true},
	}}
	var mu sync.Mutex
	runs, seen := 0, ""
	var applyErr error
	var src *k8s.Source
	op := start(t, opts, func(b *opbus.Bus) {
		must(t, b.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			spec, _ := ev.New["spec"].(map[string]any)
			name, _ := ev.New["metadata"].(map[string]any)["name"].(string)
			cm := &corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
				Data:       map[string]string{"size": fmt.Sprint(spec["size"])},
			}
			if extra, ok := spec["extra"].(string); ok {
				cm.Data["extra"] = extra
			}
			_, err := src.Client(ev).Apply(ctx, cm)
			mu.Lock()
			runs++
			applyErr = err
			mu.Unlock()
			return opbus.Status{}, err
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}}))
		// Reads the child through the informer: once it has seen a
		// value, the cache holds it.
		must(t, b.Handle("seen", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			b, _ := json.Marshal(ev.New[opbus.RelatedField])
			mu.Lock()
			seen = string(b)
			mu.Unlock()
			return opbus.Status{}, nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"related.ConfigMap[*].data"}}))
	})
	src = op.src
	state := func() (int, string, error) {
		mu.Lock()
		defer mu.Unlock()
		return runs, seen, applyErr
	}
	wid := createWidget(t, c, ns, "w", `{"size":1,"note":"a","extra":"x"}`)
	eventually(t, "the child applied and seen", func() bool {
		_, s, _ := state()
		return strings.Contains(s, `"size":"1"`) && strings.Contains(s, `"extra":"x"`)
	})
	cm := get(t, c, configMapsGVR, ns, "w")
	refs := cm.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != wid.GetUID() || refs[0].Kind != "Widget" || refs[0].APIVersion != "test.opbus.dev/v1" ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("owner references of the child: %+v, want one controller reference to the Widget of uid %s", refs, wid.GetUID())
	}
	if cm.GetLabels()["app"] != "w" {
		t.Errorf("labels of the child: %v, want app: w", cm.GetLabels())
	}
	managers := map[string]bool{}
	for _, m := range cm.GetManagedFields() {
		managers[m.Manager+" "+string(m.Operation)] = true
	}
	if !managers["opbus/child Apply"] {
		t.Errorf("managers of the child: %v, want opbus/child Apply", managers)
	}
	applies := func() int { return w.count("configmaps", "w") }
	n, _, err := state()
	if n != 1 || err != nil || applies() != 1 {
		t.Fatalf("after create: %d runs (last error %v), %d requests to the child, want 1 run and 1 request", n, err, applies())
	}

	// A change the child does not depend on: the handler runs, sends nothing.
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"note":"b"}}`)
	eventually(t, "the handler runs on spec.note", func() bool { n, _, _ := state(); return n == 2 })
	if n, _, err := state(); err != nil || applies() != 1 {
		t.Errorf("after a run with the same child (%d runs, last error %v): %d requests to the child, want still 1", n, err, applies())
	}
	if sent, skipped := k8s.Applied(src); sent != 1 || skipped != 1 {
		t.Errorf("Applied = %d sent, %d skipped, want 1 and 1", sent, skipped)
	}

	// spec.size changes: one request, the child updated.
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	eventually(t, "the child updated", func() bool {
		_, s, _ := state()
		return strings.Contains(s, `"size":"2"`)
	})
	if applies() != 2 {
		t.Errorf("after spec.size changed: %d requests to the child, want 2", applies())
	}

	// The handler stops applying data.extra: the API server removes it.
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"extra":null}}`)
	eventually(t, "data.extra removed from the child", func() bool {
		_, s, _ := state()
		return strings.Contains(s, `"size":"2"`) && !strings.Contains(s, "extra")
	})
	steady(t, "requests to the child", time.Second, applies)
	if got := applies(); got != 3 {
		t.Errorf("%d requests to the child in all, want 3", got)
	}
}

// TestClientAppliesStatus: a handler with Writes [status.observedSize]
// writes its own status with Client.ApplyStatus and is not run again by
// it, while a handler subscribed to status.observedSize runs once per
// value; the same field written by another client runs the reader and not
// the writer; the adapter's conditions stay as they are; a field outside
// Writes is refused, naming it.
func TestClientAppliesStatus(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var mu sync.Mutex
	var writer []string // spec.size at each run of the writer
	var reader []string // status.observedSize at each run of the reader
	var undeclared error
	var src *k8s.Source
	var a applies
	op := start(t, k8s.Options{Config: a.wrap(env.AdminConfig()), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("sizer", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				size := ev.New["spec"].(map[string]any)["size"]
				mu.Lock()
				writer = append(writer, fmt.Sprint(size))
				mu.Unlock()
				cl := src.Client(ev)
				if err := cl.ApplyStatus(ctx, map[string]any{"other": 1}); err != nil {
					mu.Lock()
					undeclared = err
					mu.Unlock()
				}
				return opbus.Active("sized"), cl.ApplyStatus(ctx, map[string]any{"observedSize": size})
			}, opbus.On{Fields: []string{"spec", "status"}, Writes: []string{"status.observedSize"}}))
			must(t, b.Handle("reader", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				st, _ := ev.New["status"].(map[string]any)
				mu.Lock()
				reader = append(reader, fmt.Sprint(st["observedSize"]))
				mu.Unlock()
				return opbus.Status{}, nil
			}, opbus.On{Fields: []string{"status.observedSize"}}))
		})
	src = op.src
	got := func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(writer, ","), strings.Join(reader, ",")
	}
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the reader sees observedSize 1", func() bool { _, r := got(); return strings.HasSuffix(r, "1") })
	steady(t, "runs of the writer and the reader", time.Second, func() string { w, r := got(); return w + " | " + r })
	if w, r := got(); w != "1" || (r != "<nil>,1" && r != "1") {
		t.Errorf("runs: writer %q, reader %q; want writer 1 and reader [<nil>,]1", w, r)
	}
	if n := a.count("widgets", "w"); n != 1 {
		t.Errorf("%d applies to the Widget after create, want 1 (an undeclared field sends nothing)", n)
	}
	mu.Lock()
	if undeclared == nil || !strings.Contains(undeclared.Error(), "status.other is not under the handler's On.Writes") {
		t.Errorf("ApplyStatus of status.other: %v, want an error naming status.other and On.Writes", undeclared)
	}
	mu.Unlock()
	u := get(t, c, widgetsGVR, ns, "w")
	conds := conditionsOf(u)
	if conds["Ready"].Status != metav1.ConditionTrue || conds[k8s.ConditionType("sizer")].Message != "sized" {
		t.Errorf("conditions after the handler's status apply: %+v, want Ready True and sizer's with message sized", conds)
	}
	for _, m := range u.GetManagedFields() {
		// The handler's fields go in one write with the conditions
		// (TestStatusFieldsWithConditions), which it applies as found.
		if m.Manager == "opbus/sizer" && (m.Subresource != "status" || !strings.Contains(m.FieldsV1.GetRawString(), "observedSize") || strings.Contains(m.FieldsV1.GetRawString(), "other")) {
			t.Errorf("fields of opbus/sizer: %s on %q, want status.observedSize (and the conditions), on the status subresource", m.FieldsV1.GetRawString(), m.Subresource)
		}
	}

	// Another writer sets the field: the reader runs, the writer does not.
	patch(t, c, widgetsGVR, ns, "w", `{"status":{"observedSize":5}}`, "status")
	eventually(t, "the reader sees observedSize 5", func() bool { _, r := got(); return strings.HasSuffix(r, ",5") })
	steady(t, "runs after another writer's write", time.Second, func() string { w, r := got(); return w + " | " + r })
	if w, _ := got(); w != "1" {
		t.Errorf("the writer ran on another writer's write of a field in its Writes: runs %q, want 1", w)
	}

	// spec.size changes: the writer runs once and writes 3.
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":3}}`)
	eventually(t, "the reader sees observedSize 3", func() bool { _, r := got(); return strings.HasSuffix(r, ",3") })
	steady(t, "runs after spec.size changed", time.Second, func() string { w, r := got(); return w + " | " + r })
	if w, _ := got(); w != "1,3" {
		t.Errorf("writer runs %q, want 1,3", w)
	}
	if n := a.count("widgets", "w"); n != 2 {
		t.Errorf("%d applies to the Widget in all, want 2", n)
	}
	if conds := conditionsOf(get(t, c, widgetsGVR, ns, "w")); conds["Ready"].Status != metav1.ConditionTrue {
		t.Errorf("Ready after the second apply: %+v", conds["Ready"])
	}
}

// TestStatusUIDIsNoPrecondition checks why ApplyStatus carries a
// resource version rather than a metadata.uid: the API server accepts a
// server-side apply of a custom resource's status whose metadata.uid is
// not the object's (the status strategy copies the stored metadata over
// the request's), while one of an object that does not exist creates
// nothing.
func TestStatusUIDIsNoPrecondition(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	createWidget(t, c, ns, "w", `{"size":1}`)
	apply := func(name, uid string) error {
		body := fmt.Sprintf(`{"apiVersion":"test.opbus.dev/v1","kind":"Widget","metadata":{"name":%q,"uid":%q},"status":{"observedSize":1}}`, name, uid)
		force := true
		_, err := c.Resource(widgetsGVR).Namespace(ns).Patch(t.Context(), name, types.ApplyPatchType, []byte(body),
			metav1.PatchOptions{FieldManager: "opbus/test", Force: &force}, "status")
		return err
	}
	if err := apply("w", "00000000-0000-0000-0000-000000000000"); err != nil {
		t.Errorf("apply of status with another uid: %v; the server now refuses it, and ApplyStatus could rely on the uid", err)
	}
	if err := apply("gone", "00000000-0000-0000-0000-000000000000"); !apierrors.IsNotFound(err) {
		t.Errorf("apply of the status of an object that does not exist: %v, want not found", err)
	}
	if _, err := c.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "gone", metav1.GetOptions{}); err == nil {
		t.Errorf("an apply of status created the object")
	}
}

// applies counts the server-side applies made through a config.
type applies struct {
	mu    sync.Mutex
	paths []string // URL paths of apply requests
}

// wrap returns a copy of cfg whose server-side applies a counts.
func (a *applies) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && req.Header.Get("Content-Type") == string(types.ApplyPatchType) {
				a.mu.Lock()
				a.paths = append(a.paths, req.URL.Path)
				a.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// count returns how many applies went to the object named name of the
// resource (the plural name in URLs), its status included.
func (a *applies) count(resource, name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, p := range a.paths {
		if strings.HasSuffix(p, "/"+resource+"/"+name) || strings.HasSuffix(p, "/"+resource+"/"+name+"/status") {
			n++
		}
	}
	return n
}

// TestApplyStatusGone: a handler that writes its status after its object
// was deleted and created again under the same name gets an error
// wrapping ErrGone, and nothing lands on the new object.
func TestApplyStatusGone(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	errs := make(chan error, 1)
	var src *k8s.Source
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("sizer", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				if ev.New["spec"].(map[string]any)["size"] != int64(1) {
					return opbus.Status{}, nil // the new object's
				}
				select {
				case started <- struct{}{}:
				default:
					return opbus.Status{}, nil
				}
				<-release
				err := src.Client(ev).ApplyStatus(ctx, map[string]any{"observedSize": 1})
				errs <- err
				return opbus.Status{}, nil
			}, opbus.On{Fields: []string{"spec"}, Writes: []string{"status.observedSize"}}))
		})
	src = op.src
	old := createWidget(t, c, ns, "w", `{"size":1}`)
	<-started
	if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Widget gone", func() bool {
		_, err := c.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	fresh := createWidget(t, c, ns, "w", `{"size":2}`)
	if fresh.GetUID() == old.GetUID() {
		t.Fatal("the new Widget has the old one's uid")
	}
	close(release)
	err := <-errs
	if !errors.Is(err, k8s.ErrGone) {
		t.Errorf("ApplyStatus for the deleted Widget: %v, want an error wrapping ErrGone", err)
	}
	if v, ok, _ := unstructured.NestedFieldNoCopy(get(t, c, widgetsGVR, ns, "w").Object, "status", "observedSize"); ok {
		t.Errorf("the new Widget has status.observedSize %v, written for the old one", v)
	}
}

// TestClientAppliesDeployment: a child built as a client-go apply
// configuration (a Deployment, which the API server fills with defaults)
// is applied once, not again on a run whose Deployment is the same, and
// once more when the image the handler reads changes.
func TestClientAppliesDeployment(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	var a applies
	var mu sync.Mutex
	runs := 0
	var src *k8s.Source
	op := start(t, k8s.Options{Config: a.wrap(env.AdminConfig()), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}, Status: k8s.StatusAnnotation},
		{GVR: deployments, Namespaces: []string{ns}, Owned: true},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("deploy", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			name := ev.Key.Name
			image, _ := ev.New["spec"].(map[string]any)["image"].(string)
			labels := map[string]string{"app": name}
			d := appsv1ac.Deployment(name, "").
				WithLabels(labels).
				WithSpec(appsv1ac.DeploymentSpec().
					WithReplicas(2).
					WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
					WithTemplate(corev1ac.PodTemplateSpec().
						WithLabels(labels).
						WithSpec(corev1ac.PodSpec().WithContainers(
							corev1ac.Container().WithName("app").WithImage(image).
								WithPorts(corev1ac.ContainerPort().WithContainerPort(8080))))))
			_, err := src.Client(ev).Apply(ctx, d)
			mu.Lock()
			runs++
			mu.Unlock()
			return opbus.Status{}, err
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec", `related["Deployment.apps"][*].metadata.generation`}}))
	})
	src = op.src
	count := func() int { mu.Lock(); defer mu.Unlock(); return runs }
	createWidget(t, c, ns, "web", `{"image":"app:1","note":"a"}`)
	eventually(t, "the Deployment applied", func() bool { return a.count("deployments", "web") == 1 })
	eventually(t, "the handler ran on the Deployment's appearance", func() bool { return count() >= 2 })
	patch(t, c, widgetsGVR, ns, "web", `{"spec":{"note":"b"}}`)
	eventually(t, "the handler runs on spec.note", func() bool { return count() >= 3 })
	steady(t, "applies to the Deployment", time.Second, func() int { return a.count("deployments", "web") })
	if n := a.count("deployments", "web"); n != 1 {
		t.Errorf("%d applies to the Deployment after runs with the same Deployment, want 1", n)
	}
	patch(t, c, widgetsGVR, ns, "web", `{"spec":{"image":"app:2"}}`)
	eventually(t, "the Deployment's image updated", func() bool {
		l, _, _ := unstructured.NestedSlice(get(t, c, deployments, ns, "web").Object, "spec", "template", "spec", "containers")
		return len(l) == 1 && l[0].(map[string]any)["image"] == "app:2"
	})
	steady(t, "applies to the Deployment", time.Second, func() int { return a.count("deployments", "web") })
	if n := a.count("deployments", "web"); n != 2 {
		t.Errorf("%d applies to the Deployment in all, want 2", n)
	}
	sent, skipped := k8s.Applied(src)
	t.Logf("%d runs; applies sent %d, skipped %d", count(), sent, skipped)
}
