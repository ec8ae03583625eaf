package k8s_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// logBuffer keeps what a logger writes, for a test to read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestCopiedRecordIsNotHandled creates an object with the record
// annotation of another, as `kubectl get -o yaml | kubectl create` with a
// new name does: the record is of the other object's uid, so the bus sets
// it aside (and logs it at Warn) and runs the handlers as for a new
// object, and the copy's record is rewritten with its own uid. Pods and
// Widgets: a Pod's copy is claimed as it is created, a Widget's after its
// first conditions.
func TestCopiedRecordIsNotHandled(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	for _, tc := range []struct {
		name string
		gvr  k8s.Resource
		body string // the object, with %q for its name and %s for its annotations
	}{
		{"pod", k8s.Resource{GVR: podsGVR}, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"annotations":%s},
			"spec":{"containers":[{"name":"app","image":"busybox:1.36"}]}}`},
		{"widget", k8s.Resource{GVR: widgetsGVR}, `{"apiVersion":"test.opbus.dev/v1","kind":"Widget","metadata":{"name":%q,"annotations":%s},"spec":{"size":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			c := dynClient(t, env.AdminConfig())
			var logs logBuffer
			var r runs
			tc.gvr.Namespaces = []string{ns}
			start(t, k8s.Options{
				Config:    env.AdminConfig(),
				Resources: []k8s.Resource{tc.gvr},
				Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
			}, func(b *opbus.Bus) {
				must(t, b.Handle("spec", r.handler(nil), opbus.On{Fields: []string{"spec"}}))
			})
			create := func(name, annotations string) *unstructured.Unstructured {
				t.Helper()
				u, err := c.Resource(tc.gvr.GVR).Namespace(ns).Create(t.Context(), obj(t, tc.body, name, annotations), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return u
			}
			src := create("src", "{}")
			var record string
			eventually(t, "the handler runs on the original and its record is written", func() bool {
				_, _, ok := recordOf(get(t, c, tc.gvr.GVR, ns, "src"))
				record, _ = annotationOf(get(t, c, tc.gvr.GVR, ns, "src"), k8s.AnnotationRecord)
				return r.count("spec", "src") == 1 && ok
			})

			annotations := fmt.Sprintf(`{%q:%q}`, k8s.AnnotationRecord, record)
			cp := create("copy", annotations)
			eventually(t, "the handler runs on the copy", func() bool { return r.count("spec", "copy") == 1 })
			eventually(t, "the copy's record is of its own uid", func() bool {
				inc, _, ok := recordOf(get(t, c, tc.gvr.GVR, ns, "copy"))
				return ok && inc == string(cp.GetUID())
			})
			steady(t, "handler runs", 500*time.Millisecond, r.total)
			if ev := r.of("spec", "copy")[0]; ev.Type != opbus.Create {
				t.Errorf("the handler ran on the copy as %v, want a create", ev.Type)
			}
			if got := logs.String(); !strings.Contains(got, "stored record is of another incarnation") || !strings.Contains(got, string(src.GetUID())) {
				t.Errorf("no warning naming the original's uid %s about the copied record; logs:\n%s", src.GetUID(), got)
			}
		})
	}
}
