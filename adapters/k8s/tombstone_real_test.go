package k8s_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// keepFinalizers returns a copy of cfg whose client, once *on is true,
// cannot change a finalizer: a patch that names metadata.finalizers hangs
// until its request is cancelled, as if the process died between its
// record and the finalizer.
func keepFinalizers(cfg *rest.Config, on *atomic.Bool) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if on.Load() && req.Method == http.MethodPatch && req.Body != nil {
				body, err := io.ReadAll(req.Body)
				if err != nil {
					return nil, err
				}
				req.Body = io.NopCloser(bytes.NewReader(body))
				if strings.Contains(string(body), `"finalizers"`) {
					<-req.Context().Done()
					return nil, errors.New("the process died before its finalizer patch")
				}
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

// TestDeletionFinishedBeforeACrash: an operator runs a Widget's delete
// handler, but never takes its finalizer off (it stops while the patch
// hangs). The next operator sees the Widget still terminating: it runs no
// delete handler again and takes the finalizer off, so the Widget goes.
func TestDeletionFinishedBeforeACrash(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	resources := []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}, Finalizer: true}}

	var first, second runs
	register := func(r *runs) func(b *opbus.Bus) {
		return func(b *opbus.Bus) {
			must(t, b.Handle("size", r.handler(nil), opbus.On{Fields: []string{"spec.size"}}))
			must(t, b.Handle("cleanup", r.handler(nil), opbus.On{Types: []opbus.EventType{opbus.Delete}}))
		}
	}
	var keep atomic.Bool
	op := start(t, k8s.Options{Config: keepFinalizers(env.AdminConfig(), &keep), Resources: resources}, register(&first))
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "w is claimed with the finalizer and handled", func() bool {
		return slices.Contains(get(t, c, widgetsGVR, ns, "w").GetFinalizers(), k8s.Finalizer) && first.count("size", "w") == 1
	})
	keep.Store(true)
	if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first operator runs the delete handler and writes its tombstone", func() bool {
		rec, _ := annotationOf(get(t, c, widgetsGVR, ns, "w"), k8s.AnnotationRecord)
		return first.count("cleanup", "w") == 1 && strings.Contains(rec, `"ended":`)
	})
	op.stop(t)
	w := get(t, c, widgetsGVR, ns, "w")
	if !slices.Contains(w.GetFinalizers(), k8s.Finalizer) {
		t.Fatal("the finalizer went with the first operator: the test's client did not keep it")
	}
	// Stopped while its finalizer patch hangs, the first operator leaves
	// its tombstone or, when its stop saved the deletion as pending (rule
	// 16), the record whose digests say the delete handler ran: either
	// way, nothing runs again.

	start(t, k8s.Options{Config: env.AdminConfig(), Resources: resources}, register(&second))
	eventually(t, "w goes", func() bool {
		_, err := c.Resource(widgetsGVR).Namespace(ns).Get(context.Background(), "w", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if n := second.count("cleanup", "w"); n != 0 {
		t.Errorf("the next operator ran the delete handler %d times for a deletion already handled", n)
	}
	equal := first.count("cleanup", "w")
	if equal != 1 {
		t.Errorf("the first operator ran the delete handler %d times, want 1", equal)
	}
}

// TestTombstoneOnATerminatingObject: a Widget being deleted, with the
// finalizer and the tombstone its last operator wrote before it died
// (issue 32, defect 2: the record used to be deleted before the finalizer
// went, so the next process ran the deletion again). A new operator runs
// no delete handler and takes the finalizer off; the Widget goes.
func TestTombstoneOnATerminatingObject(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	w := createWidget(t, c, ns, "w", `{"size":1}`)
	tomb := fmt.Sprintf(`{"v":4,"inc":%q,"ended":%d}`, w.GetUID(), time.Now().UnixMilli())
	patch(t, c, widgetsGVR, ns, "w", fmt.Sprintf(`{"metadata":{"finalizers":[%q],"annotations":{%q:%q}}}`, k8s.Finalizer, k8s.AnnotationRecord, tomb))
	if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	var r runs
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}, Finalizer: true}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("size", r.handler(nil), opbus.On{Fields: []string{"spec.size"}}))
			must(t, b.Handle("cleanup", r.handler(nil), opbus.On{Types: []opbus.EventType{opbus.Delete}}))
		})
	eventually(t, "w goes", func() bool {
		_, err := c.Resource(widgetsGVR).Namespace(ns).Get(context.Background(), "w", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if n := r.total(); n != 0 {
		t.Errorf("%d handler runs for a Widget whose deletion was handled, want none", n)
	}
}
