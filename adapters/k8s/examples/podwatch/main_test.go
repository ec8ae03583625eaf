package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

const waitFor = 20 * time.Second

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitFor)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRBAC runs podwatch as a user with no permissions but those rbac.yaml
// grants: it watches, annotates, emits Events and leads, and nothing it
// does is forbidden.
func TestRBAC(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	admin, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	userCfg := env.UserConfig(kubetest.OperatorUser)
	user, err := dynamic.NewForConfig(userCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := user.Resource(pods).Namespace(ns).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("before rbac.yaml, listing pods as %s: got %v, want Forbidden", kubetest.OperatorUser, err)
	}
	env.ApplyRBACFile(t, "rbac.yaml", ns, kubetest.OperatorUser)
	eventually(t, "the authorizer knows the bindings", func() bool {
		_, err := user.Resource(pods).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		return err == nil
	})

	var logs syncBuffer
	pw := &podwatch{log: slog.New(slog.NewTextHandler(io.MultiWriter(&logs, t.Output()), nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pw.run(ctx, userCfg, settings{Namespaces: []string{ns}, LeaseNamespace: ns, Identity: "podwatch-test"})
	}()
	t.Cleanup(cancel)

	p := &unstructured.Unstructured{}
	_ = json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"busybox:1.36"}]}}`), &p.Object)
	pod, err := admin.Resource(pods).Namespace(ns).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "podwatch claims the pod", func() bool {
		got, err := admin.Resource(pods).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
		_, ok := got.GetAnnotations()["podwatch.opbus.dev/record"] // Options.Name is podwatch
		return err == nil && ok
	})
	patchStatus := func(state string) {
		body := fmt.Sprintf(`{"status":{"containerStatuses":[{"name":"app","image":"busybox:1.36","imageID":"","ready":false,"restartCount":0,"state":%s}]}}`, state)
		if _, err := admin.Resource(pods).Namespace(ns).Patch(t.Context(), "web", types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	patchStatus(`{"running":{"startedAt":"2026-01-01T00:00:00Z"}}`)
	patchStatus(`{"running":null,"terminated":{"exitCode":1,"reason":"Error","finishedAt":"2026-01-01T00:01:00Z"}}`)

	want := opbus.Blocked("container app terminated: exit 1 (Error)")
	eventually(t, "the status annotation says the container failed", func() bool {
		got, err := admin.Resource(pods).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
		var st opbus.Status
		return err == nil && json.Unmarshal([]byte(got.GetAnnotations()["podwatch.opbus.dev/status"]), &st) == nil && st == want
	})
	eventually(t, "an Event says Blocked", func() bool {
		l, err := admin.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range l.Items {
			var ev corev1.Event
			b, _ := json.Marshal(e.Object)
			if json.Unmarshal(b, &ev) == nil && ev.InvolvedObject.UID == pod.GetUID() && ev.Reason == "Blocked" && ev.Source.Component == "podwatch" {
				return true
			}
		}
		return false
	})
	eventually(t, "the termination is logged", func() bool {
		return strings.Contains(logs.String(), `msg="podwatch: container terminated" pod=`+ns+`/web container=app exitCode=1 reason=Error`)
	})
	eventually(t, "both status changes are counted", func() bool { return pw.updates.Load() == 2 })
	lease, err := admin.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).
		Namespace(ns).Get(t.Context(), "podwatch", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease: %v", err)
	}
	if h, _, _ := unstructured.NestedString(lease.Object, "spec", "holderIdentity"); h != "podwatch-test" {
		t.Errorf("Lease held by %q, want podwatch-test", h)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("podwatch did not stop")
	}
	if l := strings.ToLower(logs.String()); strings.Contains(l, "forbidden") {
		t.Errorf("something podwatch did was forbidden:\n%s", logs.String())
	}
	if n := pw.updates.Load(); n != 2 {
		t.Errorf("%d updates counted, want 2: the adapter's own writes must not count", n)
	}
}
