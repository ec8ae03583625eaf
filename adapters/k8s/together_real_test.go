package k8s_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// patches keeps the merge patches an operator sends to one object.
type patches struct {
	mu     sync.Mutex
	name   string
	bodies []map[string]any
}

func (p *patches) wrap(t *testing.T, cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/"+p.name) && req.Body != nil {
				body, err := io.ReadAll(req.Body)
				if err != nil {
					return nil, err
				}
				req.Body = io.NopCloser(bytes.NewReader(body))
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Errorf("a patch that is not JSON: %s", body)
				}
				p.mu.Lock()
				p.bodies = append(p.bodies, m)
				p.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// since returns the annotations each patch from the n-th on wrote.
func (p *patches) since(n int) [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]string
	for _, b := range p.bodies[min(n, len(p.bodies)):] {
		meta, _ := b["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		var names []string
		for _, name := range []string{k8s.AnnotationRecord, k8s.AnnotationStatus} {
			if _, ok := ann[name]; ok {
				names = append(names, name)
			}
		}
		out = append(out, names)
	}
	return out
}

func (p *patches) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

// TestRecordAndStatusOnePatch (rule K31, core rule 22b): on a kind whose
// status is an annotation, a pass that changes the record and the status
// writes both in one patch, under the object's uid; a pass that leaves the
// status as it was writes the record alone. The records written so are
// durable: a restarted operator runs nothing.
func TestRecordAndStatusOnePatch(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	p := &patches{name: "web"}
	var r runs
	register := func(b *opbus.Bus) {
		must(t, b.Handle("h", r.handler(func(ev *opbus.Event) opbus.Status {
			v, _ := opbus.Get[string](ev.New, "metadata.labels.v")
			return opbus.Active("v=" + v)
		}), opbus.On{Fields: []string{"metadata.labels"}}))
	}
	opts := k8s.Options{Config: p.wrap(t, env.AdminConfig()), Resources: []k8s.Resource{{GVR: podsGVR, Namespaces: []string{ns}}}}
	op := start(t, opts, register)

	pod := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"v":"a"}},
		"spec":{"containers":[{"name":"app","image":"busybox:1.36"}]}}`)
	created, err := c.Resource(podsGVR).Namespace(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shows := func(msg string) func() bool {
		return func() bool {
			v, _ := annotationOf(get(t, c, podsGVR, ns, "web"), k8s.AnnotationStatus)
			var s opbus.Status
			return json.Unmarshal([]byte(v), &s) == nil && s.Message == msg
		}
	}
	both := []string{k8s.AnnotationRecord, k8s.AnnotationStatus}
	eventually(t, "the first status", shows("v=a"))
	first := p.since(0)
	if len(first) == 0 || fmt.Sprint(first[len(first)-1]) != fmt.Sprint(both) {
		t.Fatalf("the first pass's patches wrote %v; want the last to write %v together", first, both)
	}
	p.mu.Lock()
	meta := p.bodies[len(p.bodies)-1]["metadata"].(map[string]any)
	p.mu.Unlock()
	if meta["uid"] != string(created.GetUID()) {
		t.Errorf("the combined patch carries uid %v, want the Pod's %s as a precondition", meta["uid"], created.GetUID())
	}

	n := p.count()
	patch(t, c, podsGVR, ns, "web", `{"metadata":{"labels":{"v":"b"}}}`)
	eventually(t, "the second status", shows("v=b"))
	steady(t, "the operator's patches after the status changed", 300*time.Millisecond, p.count)
	if got := p.since(n); fmt.Sprint(got) != fmt.Sprint([][]string{both}) {
		t.Errorf("a change of record and status: patches %v, want one writing %v", got, both)
	}

	n = p.count()
	patch(t, c, podsGVR, ns, "web", `{"metadata":{"labels":{"w":"x"}}}`)
	eventually(t, "the third run", func() bool { return r.count("h", "web") == 3 })
	eventually(t, "the record of the third run", func() bool { return p.count() > n })
	steady(t, "the operator's patches after the third run", 300*time.Millisecond, p.count)
	if got := p.since(n); fmt.Sprint(got) != fmt.Sprint([][]string{{k8s.AnnotationRecord}}) {
		t.Errorf("a change of the record alone: patches %v, want one writing the record", got)
	}
	op.stop(t)

	noRunsAfterRestart(t, env, opts.Resources, "metadata.labels", "the records written with the statuses hold what was handled")
}

// noRunsAfterRestart starts an operator on resources with handler h on
// field and checks that it runs nothing once ready: the records show every
// value handled. why is said if it runs.
func noRunsAfterRestart(t *testing.T, env *kubetest.Env, resources []k8s.Resource, field, why string) {
	t.Helper()
	var again runs
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: resources}, func(b *opbus.Bus) {
		must(t, b.Handle("h", again.handler(nil), opbus.On{Fields: []string{field}}))
	})
	eventually(t, "the restarted Source is ready", func() bool { return op.src.Ready() == nil })
	steady(t, "runs after the restart", time.Second, again.total)
	if n := again.total(); n != 0 {
		t.Errorf("%d runs after the restart, want none: %s", n, why)
	}
}

// TestRecordAndStatusRefusedApart (rule K31): when an admission policy
// refuses the status annotation, the combined patch is refused for good
// and made again as two writes: the record lands (a restarted operator
// runs nothing), the status alone is refused, reported with one
// StatusRefused Event, and no RecordRefused Event is made.
func TestRecordAndStatusRefusedApart(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	policy := admissionPolicy(t, c, ns, "widgets",
		fmt.Sprintf(`!has(object.metadata.annotations) || !(%q in object.metadata.annotations)`, k8s.AnnotationStatus),
		"no opbus status on this widget",
		fmt.Sprintf(`{"metadata":{"annotations":{%q:"{}"}}}`, k8s.AnnotationStatus))
	res := []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}, Status: k8s.StatusAnnotation}}
	var r runs
	op := start(t, k8s.Options{Config: env.AdminConfig(), Resources: res}, func(b *opbus.Bus) {
		must(t, b.Handle("h", r.handler(func(*opbus.Event) opbus.Status { return opbus.Active("done") }),
			opbus.On{Fields: []string{"spec"}}))
	})
	w := obj(t, `{"apiVersion":"test.opbus.dev/v1","kind":"Widget","metadata":{"name":"w","labels":{%q:%q}},"spec":{"size":1}}`, refuseLabel, ns)
	if _, err := c.Resource(widgetsGVR).Namespace(ns).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the StatusRefused Event", func() bool { return len(refusalEvents(t, c, ns, k8s.ReasonStatusRefused)["w"]) > 0 })
	got := get(t, c, widgetsGVR, ns, "w")
	if v, _ := annotationOf(got, k8s.AnnotationRecord); !strings.Contains(v, `"h"`) {
		t.Errorf("the record %q does not hold the handler's digest: the refused status took the record with it", v)
	}
	if _, ok := annotationOf(got, k8s.AnnotationStatus); ok {
		t.Errorf("the status annotation is there despite the policy")
	}
	evs := refusalEvents(t, c, ns, k8s.ReasonStatusRefused)["w"]
	if len(evs) != 1 || !strings.Contains(evs[0].Message, policy) {
		t.Errorf("StatusRefused Events %+v, want one naming the policy %s", evs, policy)
	}
	if evs := refusalEvents(t, c, ns, k8s.ReasonRecordRefused)["w"]; len(evs) != 0 {
		t.Errorf("RecordRefused Events %+v, want none: only the status is refused", evs)
	}
	if n := r.count("h", "w"); n != 1 {
		t.Errorf("the handler ran %d times, want 1", n)
	}
	op.stop(t)

	noRunsAfterRestart(t, env, res, "spec", "the record was saved apart from the refused status")
}
