package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	neturl "net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// explainOperator runs an operator with ServeExplain on Widgets of a new
// namespace: size succeeds; quota fails (retried in an hour) and poll
// asks Again on Widgets of size 2 or more. It creates fine (size 1) and
// w (size 2) and returns the metrics server's servers.
func explainOperator(t *testing.T) (op *operator, sv *k8s.Servers, ns string, c dynamic.Interface) {
	t.Helper()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns = env.Namespace(t)
	c = dynClient(t, env.AdminConfig())

	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	op = start(t, k8s.Options{Config: env.AdminConfig(), Metrics: m,
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}, func(b *opbus.Bus) {
		on := opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}
		must(t, b.Handle("size", func(context.Context, *opbus.Event) (opbus.Status, error) {
			return opbus.Active("sized"), nil
		}, on))
		big := func(ev *opbus.Event) bool { size, _ := opbus.Get[int](ev.New, "spec.size"); return size > 1 }
		must(t, b.Handle("quota", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			if !big(ev) {
				return opbus.Status{}, nil
			}
			return opbus.Status{}, opbus.RetryAfter(time.Hour, errors.New("quota exceeded"))
		}, on))
		must(t, b.Handle("poll", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			if !big(ev) {
				return opbus.Active("rolled out"), nil
			}
			ev.Again(time.Hour)
			return opbus.Waiting("rolling out"), nil
		}, on))
	})
	sv, err = op.src.Serve(t.Context(), k8s.Flags{MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: "0", ServeExplain: true})
	if err != nil {
		t.Fatal(err)
	}
	createWidget(t, c, ns, "fine", `{"size":1}`)
	createWidget(t, c, ns, "w", `{"size":2}`)
	return op, sv, ns, c
}

// TestExplainReal runs an operator with ServeExplain against a real API
// server: a Widget's handlers succeed, fail (retried in an hour) and poll
// (Again). GET /explain on the metrics server answers with the bus's
// explanation as JSON; ExplainObject reads the same from the record
// annotation of the Widget as the API server returns it. Without
// ServeExplain, /explain is not served. /explain without a query is an
// HTML page that lists w (failing, polling), not fine (all handled), and
// links to w's explanation.
func TestExplainReal(t *testing.T) {
	t.Parallel()
	op, sv, ns, c := explainOperator(t)

	url := "http://" + sv.Metrics.String() + "/explain?kind=" + widgetKind + "&namespace=" + ns + "&name=w"
	var why opbus.Explanation
	eventually(t, "/explain shows quota failed and poll scheduled", func() bool {
		code, body := httpGet(t, url)
		if code != 200 {
			return false
		}
		if err := json.Unmarshal([]byte(body), &why); err != nil {
			t.Fatalf("/explain: %v: %s", err, body)
		}
		r := reasons(why.Handlers)
		return r["quota"].Reason == opbus.ReasonFailed && r["poll"].Reason == opbus.ReasonScheduled
	})
	r := reasons(why.Handlers)
	if h := r["size"]; h.Reason != opbus.ReasonHandled || h.Slot == nil || h.Slot.Message != "sized" {
		t.Errorf("size: got %+v, want handled, slot sized", h)
	}
	if h := r["quota"]; !strings.HasPrefix(h.Error, "quota exceeded") || h.Attempt != 1 || h.NextRetry == nil || time.Until(*h.NextRetry) < 50*time.Minute {
		t.Errorf("quota: got %+v, want attempt 1, its error, a retry in about an hour", h)
	}
	if why.Source != "bus" || why.Key.Kind != widgetKind || why.Incarnation == "" {
		t.Errorf("report: got %+v", why)
	}
	if code, body := httpGet(t, "http://"+sv.Metrics.String()+"/explain?kind="+widgetKind); code != 400 || !strings.Contains(body, "expected ?kind=") {
		t.Errorf("/explain without a name: got %d %q, want 400", code, body)
	}

	// The page lists w, not fine, and links to w's explanation.
	base := "http://" + sv.Metrics.String() + "/explain"
	var page string
	eventually(t, "the page lists w", func() bool {
		code, body := httpGet(t, base)
		page = body
		// fine is listed until its first pass has handled it: wait for both.
		return code == 200 && strings.Contains(body, ">Widget.test.opbus.dev "+ns+"/w</a>") && strings.Contains(body, "2 objects watched; 1 listed")
	})
	for _, want := range []string{"2 objects watched; 1 listed", `<td>quota</td><td class="failed">failed</td>`, "error: quota exceeded", `<td>poll</td><td class="scheduled">scheduled</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "/fine<") {
		t.Errorf("page lists fine, whose handlers are all handled:\n%s", page)
	}
	// Read-only: a write method is refused, and reading the page and the
	// explanation writes nothing to the object.
	resp, err := http.Post(base+"?kind="+widgetKind+"&namespace="+ns+"&name=w", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /explain: got %d, want 405", resp.StatusCode)
	}
	// The operator's own writes settle first: w's version stays for 2 s.
	before := get(t, c, widgetsGVR, ns, "w").GetResourceVersion()
	settling := time.Now()
	for stable := time.Now(); time.Since(stable) < 2*time.Second; time.Sleep(100 * time.Millisecond) {
		if rv := get(t, c, widgetsGVR, ns, "w").GetResourceVersion(); rv != before {
			before, stable = rv, time.Now()
		}
		if time.Since(settling) > waitFor {
			t.Fatalf("w's version did not settle within %v", waitFor)
		}
	}
	for range 5 {
		httpGet(t, base)
		httpGet(t, base+"?kind="+widgetKind+"&namespace="+ns+"&name=w")
	}
	if after := get(t, c, widgetsGVR, ns, "w").GetResourceVersion(); after != before {
		t.Errorf("w's resourceVersion went %s -> %s while its explanation was read: want no write", before, after)
	}
	link := regexp.MustCompile(`<a href="([^"]+)">`).FindStringSubmatch(page)
	if link == nil {
		t.Fatalf("page: no link:\n%s", page)
	}
	target, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := neturl.Parse(html.UnescapeString(link[1]))
	if err != nil {
		t.Fatal(err)
	}
	code, body := httpGet(t, target.ResolveReference(ref).String())
	var linked opbus.Explanation
	if code != 200 || json.Unmarshal([]byte(body), &linked) != nil || linked.Key.Name != "w" || reasons(linked.Handlers)["quota"].Reason != opbus.ReasonFailed {
		t.Errorf("the page's link %s: got %d %s", link[1], code, body)
	}

	// The record on the object, as a client reads it.
	var fromObject *opbus.Explanation
	eventually(t, "the record annotation shows the failure", func() bool {
		u, err := c.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fromObject, err = k8s.ExplainObject(u, "", time.Now())
		return err == nil && reasons(fromObject.Handlers)["quota"].Reason == opbus.ReasonFailed
	})
	ro := reasons(fromObject.Handlers)
	if ro["size"].Reason != opbus.ReasonRan || ro["poll"].Reason != opbus.ReasonScheduled || !strings.HasPrefix(ro["quota"].Error, "quota exceeded") {
		t.Errorf("ExplainObject: got %+v", fromObject.Handlers)
	}
	if fromObject.Incarnation != why.Incarnation || fromObject.Status == nil || fromObject.Status.Level != "error" {
		t.Errorf("ExplainObject: incarnation %q (bus %q), status %+v; want the same incarnation, error", fromObject.Incarnation, why.Incarnation, fromObject.Status)
	}
	if _, err := k8s.ExplainObject(mustGet(t, c.Resource(widgetsGVR).Namespace(ns), "w"), "other", time.Now()); err == nil || !strings.Contains(err.Error(), "other.opbus.dev/record") {
		t.Errorf("another operator's record: got %v, want an error naming its annotation", err)
	}

	// Off by default.
	off, err := op.src.Serve(t.Context(), k8s.Flags{MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := httpGet(t, "http://"+off.Metrics.String()+"/explain?kind="+widgetKind+"&namespace="+ns+"&name=w"); code != 404 {
		t.Errorf("/explain without ServeExplain: got %d, want 404", code)
	}
}

func reasons(hs []opbus.HandlerExplanation) map[string]opbus.HandlerExplanation {
	out := map[string]opbus.HandlerExplanation{}
	for _, h := range hs {
		out[h.ID] = h
	}
	return out
}

func mustGet(t *testing.T, ri dynamic.ResourceInterface, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := ri.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}
