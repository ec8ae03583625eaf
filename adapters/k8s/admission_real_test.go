package k8s_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

var (
	policiesGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	bindingsGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	eventsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// refuseLabel marks the Widgets that a test's admission policy refuses
// writes to; its value is the test's namespace, so that the policy of one
// test never touches another's objects.
const refuseLabel = "test.opbus.dev/refuse"

// Figures of TestAdmissionRefusedWritesBackOff.
const (
	refusedObjects = 50
	normalObjects  = 3
	// admissionWindow is how long the test watches the operator once every
	// object has been handled.
	admissionWindow = 30 * time.Second
	// promptly bounds the time from a change of a normal Widget to its
	// conditions showing it handled, throughout the window.
	promptly = 5 * time.Second
)

// request is one request an operator sent, with the code it got back.
type request struct {
	at     time.Time
	method string
	path   string
	code   int
}

// requests records every request an operator sends.
type requests struct {
	mu   sync.Mutex
	list []request
}

// wrap returns a copy of cfg whose requests rs records. The copy sets no
// rate limit, so that the operator runs with the adapter's own default.
func (rs *requests) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = 0, 0, nil
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			rs.mu.Lock()
			rs.list = append(rs.list, request{at: time.Now(), method: req.Method, path: req.URL.Path, code: code})
			rs.mu.Unlock()
			return resp, err
		})
	})
	return cfg
}

// where returns the requests that keep says to keep.
func (rs *requests) where(keep func(request) bool) []request {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []request
	for _, r := range rs.list {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// objectName returns the name of the Widget a request is about, and
// whether it is about its status subresource; "" for other requests.
func objectName(path string) (name string, status bool) {
	_, rest, ok := strings.Cut(path, "/widgets/")
	if !ok {
		return "", false
	}
	name, sub, _ := strings.Cut(rest, "/")
	return name, sub == "status"
}

// admissionPolicy denies, with a ValidatingAdmissionPolicy and its
// binding (evaluated in the API server, no webhook), the updates of
// resource ("widgets" or "widgets/status") in namespace ns, of Widgets
// labelled refuseLabel=ns, for which expression is false. It waits until
// the API server enforces the policy, which it checks with dry-run
// patches (body) of a Widget it creates and deletes before returning.
func admissionPolicy(t *testing.T, c dynamic.Interface, ns, resource, expression, message, body string) string {
	t.Helper()
	name := "refuse-" + ns
	policy := obj(t, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
		"metadata":{"name":%q},
		"spec":{"failurePolicy":"Fail",
			"matchConstraints":{
				"resourceRules":[{"apiGroups":["test.opbus.dev"],"apiVersions":["v1"],"operations":["UPDATE"],"resources":[%q]}],
				"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":%q}},
				"objectSelector":{"matchLabels":{%q:%q}}},
			"validations":[{"expression":%q,"message":%q}]}}`,
		name, resource, ns, refuseLabel, ns, expression, message)
	binding := obj(t, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
		"metadata":{"name":%q},
		"spec":{"policyName":%q,"validationActions":["Deny"]}}`, name, name)
	for _, o := range []struct {
		gvr schema.GroupVersionResource
		obj *unstructured.Unstructured
	}{{policiesGVR, policy}, {bindingsGVR, binding}} {
		if _, err := c.Resource(o.gvr).Create(t.Context(), o.obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", o.gvr.Resource, name, err)
		}
		t.Cleanup(func() {
			// t.Context is already canceled here.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.Resource(o.gvr).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete %s %s: %v", o.gvr.Resource, name, err)
			}
		})
	}
	probe := obj(t, `{"apiVersion":"test.opbus.dev/v1","kind":"Widget",
		"metadata":{"name":"probe","labels":{%q:%q}},"spec":{}}`, refuseLabel, ns)
	if _, err := c.Resource(widgetsGVR).Namespace(ns).Create(t.Context(), probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var sub []string
	if strings.HasSuffix(resource, "/status") {
		sub = []string{"status"}
	}
	eventually(t, "the admission policy is enforced", func() bool {
		_, err := c.Resource(widgetsGVR).Namespace(ns).Patch(t.Context(), "probe", types.MergePatchType, []byte(body),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, sub...)
		return err != nil && strings.Contains(err.Error(), message)
	})
	if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestAdmissionRefusedWritesBackOff runs an operator on 50 Widgets whose
// writes an admission policy in the API server refuses — their records
// in one subtest, their conditions in another, their claims (the empty
// record) in a third — and 3 Widgets it lets through, and records every
// request the operator sends for 30 s. The operator uses the adapter's
// default client rate limit (DefaultQPS: none).
//
// Each refused write is retried on the bus's default backoff (1 s, ×2,
// ±20%) and no faster: the refused requests to each Widget are bounded
// by the schedule, and the handler ran once on each. A refused claim is
// retried on the claim queue's schedule (5 ms, ×2), and the handler never
// runs. Each refused Widget has one Warning Event that names the policy.
// The normal Widgets are handled promptly throughout: each change of one,
// every 2 s, is handled and its conditions show its generation within
// 5 s; the refused writes do not flood the API server: the operator sends
// at most requestBudget/2 requests a second. When it stops, Run reports each
// record still refused (that work could not be saved), and nothing else.
//
// Before writes refused for good backed off (issue 12), each was retried
// about once a second: with the bus's backoff fixed at 1 s, these 50
// objects alone send about 50 requests a second, the whole budget,
// and the test fails.
// requestBudget is the request rate, a second, that the refused writes
// must leave mostly unused: the client rate limit this adapter had by
// default before it relied on the API server's priority and fairness.
const requestBudget = 50

func TestAdmissionRefusedWritesBackOff(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	for _, tc := range []struct {
		name   string
		reason string
		// resource, expression and message make the policy; probe is a
		// write that it refuses.
		resource, expression, message, probe string
		status                               bool // the refused writes are of the status subresource
		claim                                bool // the claim is refused: the bus never sees the objects
	}{
		{
			name:     "record",
			reason:   k8s.ReasonRecordRefused,
			resource: "widgets",
			expression: fmt.Sprintf(`!has(object.metadata.annotations) || !(%q in object.metadata.annotations) || object.metadata.annotations[%q] == ""`,
				k8s.AnnotationRecord, k8s.AnnotationRecord),
			message: "no opbus record on this widget",
			probe:   fmt.Sprintf(`{"metadata":{"annotations":{%q:"{}"}}}`, k8s.AnnotationRecord),
		},
		{
			name:       "status",
			reason:     k8s.ReasonStatusRefused,
			resource:   "widgets/status",
			expression: `!has(object.status) || !has(object.status.conditions) || object.status.conditions.all(c, c.status == "Unknown")`,
			message:    "no known condition on this widget",
			probe:      `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Probe","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`,
			status:     true,
		},
		{
			name:     "claim",
			reason:   k8s.ReasonRecordRefused,
			resource: "widgets",
			expression: fmt.Sprintf(`!has(object.metadata.annotations) || !(%q in object.metadata.annotations)`,
				k8s.AnnotationRecord),
			message: "no opbus annotation on this widget",
			probe:   fmt.Sprintf(`{"metadata":{"annotations":{%q:""}}}`, k8s.AnnotationRecord),
			claim:   true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			c := dynClient(t, env.AdminConfig())
			policy := admissionPolicy(t, c, ns, tc.resource, tc.expression, tc.message, tc.probe)
			backoff := opbus.Backoff{Initial: time.Second, Max: 5 * time.Minute, Jitter: 0.2} // the default

			var rs requests
			var r runs
			var logs logBuffer // each refused write is logged at Error
			op := startBus(t, k8s.Options{
				Config:    rs.wrap(env.AdminConfig()),
				Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
				Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
			}, opbus.Options{Backoff: backoff}, func(b *opbus.Bus) {
				must(t, b.Handle("h", r.handler(nil), opbus.On{}))
			})
			for i := range refusedObjects {
				w := obj(t, `{"apiVersion":"test.opbus.dev/v1","kind":"Widget",
					"metadata":{"name":"refused-%02d","labels":{%q:%q}},"spec":{"size":1}}`, i, refuseLabel, ns)
				if _, err := c.Resource(widgetsGVR).Namespace(ns).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range normalObjects {
				createWidget(t, c, ns, fmt.Sprintf("normal-%d", i), `{"size":1}`)
			}
			for i := range refusedObjects {
				name := fmt.Sprintf("refused-%02d", i)
				if tc.claim {
					eventually(t, "the claim of "+name+" is refused", func() bool {
						return len(rs.where(func(q request) bool {
							n, _ := objectName(q.path)
							return n == name && q.code == http.StatusUnprocessableEntity
						})) > 0
					})
					continue
				}
				eventually(t, "the handler runs on "+name, func() bool { return r.count("h", name) > 0 })
			}
			for i := range normalObjects {
				name := fmt.Sprintf("normal-%d", i)
				eventually(t, "the conditions of "+name+" land", func() bool { return handledAt(t, c, ns, name, 1) })
			}

			// The window: a normal Widget changes every 2 s, and must be
			// handled promptly each time.
			begin := time.Now()
			var latencies []time.Duration
			for i := 0; time.Since(begin) < admissionWindow; i++ {
				name := fmt.Sprintf("normal-%d", i%normalObjects)
				changed := time.Now()
				gen := patch(t, c, widgetsGVR, ns, name, fmt.Sprintf(`{"spec":{"size":%d}}`, i+2)).GetGeneration()
				for !handledAt(t, c, ns, name, gen) {
					if time.Since(changed) > waitFor {
						t.Fatalf("change %d of %s (generation %d) not handled within %v", i+1, name, gen, waitFor)
					}
					time.Sleep(20 * time.Millisecond)
				}
				latencies = append(latencies, time.Since(changed))
				time.Sleep(time.Until(changed.Add(2 * time.Second)))
			}
			end := time.Now()
			window := end.Sub(begin)

			// Requests per refused Widget, over the whole run.
			// A policy that gives no reason denies with 422 Invalid (its
			// message says "forbidden").
			refusedCode := http.StatusUnprocessableEntity
			fewest, most, total, span := 0, 0, 0, time.Duration(0)
			for i := range refusedObjects {
				name := fmt.Sprintf("refused-%02d", i)
				writes := rs.where(func(q request) bool {
					n, _ := objectName(q.path)
					return n == name && q.method != http.MethodGet
				})
				var refused []time.Time
				for _, q := range writes {
					if _, status := objectName(q.path); q.code == refusedCode && status == tc.status {
						refused = append(refused, q.at)
					}
				}
				if len(refused) == 0 {
					t.Errorf("%s: no write refused; writes:\n%s", name, formatRequests(writes))
					continue
				}
				d := end.Sub(refused[0])
				bound := maxRuns(backoff, d)
				if tc.claim {
					bound = maxClaims(d)
				}
				if total == 0 || len(refused) < fewest {
					fewest = len(refused)
				}
				most = max(most, len(refused))
				total += len(refused)
				span = max(span, d)
				if len(refused) > bound {
					t.Errorf("%s: %d refused writes in %v; the backoff allows %d:\n%s", name, len(refused), d.Round(time.Millisecond), bound, formatRequests(writes))
				}
				if len(refused) < min(bound, 3) {
					t.Errorf("%s: %d refused writes in %v; the backoff retries %d times:\n%s", name, len(refused), d.Round(time.Millisecond), bound-1, formatRequests(writes))
				}
				// Besides the refused writes: the claim, its first
				// conditions, and the write that goes through.
				others, runs := 3, 1
				if tc.claim {
					others, runs = 0, 0
				}
				if len(writes) > len(refused)+others {
					t.Errorf("%s: %d writes, %d of them refused; want at most %d others:\n%s", name, len(writes), len(refused), others, formatRequests(writes))
				}
				if n := r.count("h", name); n != runs {
					t.Errorf("%s: the handler ran %d times, want %d: its result waits in memory for the write, or the bus never sees an unclaimed object", name, n, runs)
				}
			}

			// The rates in the window, against the client's budget.
			var refusedIn, toRefused, toNormal, events, other int
			inWindow := rs.where(func(q request) bool { return !q.at.Before(begin) && !q.at.After(end) })
			for _, q := range inWindow {
				n, _ := objectName(q.path)
				switch {
				case strings.HasPrefix(n, "refused-") && q.code == refusedCode:
					refusedIn++
				case strings.HasPrefix(n, "refused-"):
					toRefused++
				case strings.HasPrefix(n, "normal-"):
					toNormal++
				case strings.HasSuffix(q.path, "/events") || strings.Contains(q.path, "/events/"):
					events++
				default:
					other++
				}
			}
			rate := func(n int) float64 { return float64(n) / window.Seconds() }
			slices.Sort(latencies)
			allowed := maxRuns(backoff, span)
			if tc.claim {
				allowed = maxClaims(span)
			}
			t.Logf("%d refused Widgets: %d refused writes in all, %d to %d each over up to %v since the first (the backoff allows %d; a retry every second, %d)",
				refusedObjects, total, fewest, most, span.Round(time.Millisecond), allowed, int(span/time.Second)+1)
			t.Logf("in the %v window: %d requests, %.1f/s, against a budget of %d/s: %d refused writes (%.1f/s), %d other requests about the refused Widgets, %d about the normal ones, %d about Events, %d others",
				window.Round(time.Millisecond), len(inWindow), rate(len(inWindow)), requestBudget, refusedIn, rate(refusedIn), toRefused, toNormal, events, other)
			t.Logf("%d changes of normal Widgets in the window, each handled and its conditions written in %v (median) to %v (worst)",
				len(latencies), latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
			if worst := latencies[len(latencies)-1]; worst > promptly {
				t.Errorf("a change of a normal Widget took %v to be handled; want at most %v", worst, promptly)
			}
			if rate(len(inWindow)) > requestBudget/2 {
				t.Errorf("%.1f requests a second in the window; want at most half a budget of %d", rate(len(inWindow)), requestBudget)
			}

			// One Warning Event per refused Widget, naming the policy; none
			// on the normal ones.
			var got map[string][]corev1.Event
			eventually(t, "each refused Widget has its Event", func() bool {
				got = refusalEvents(t, c, ns, tc.reason)
				for i := range refusedObjects {
					if len(got[fmt.Sprintf("refused-%02d", i)]) == 0 {
						return false
					}
				}
				return true
			})
			for name, evs := range got {
				switch {
				case !strings.HasPrefix(name, "refused-"):
					t.Errorf("%s: %d %s Events, want none", name, len(evs), tc.reason)
				case len(evs) != 1 || evs[0].Count != 1 || evs[0].Type != corev1.EventTypeWarning:
					t.Errorf("%s: %d %s Events (%+v), want one Warning, counted once", name, len(evs), tc.reason, evs)
				case !strings.Contains(evs[0].Message, policy) || !strings.Contains(evs[0].Message, tc.message):
					t.Errorf("%s: %s Event %q does not name the policy %s and its message", name, tc.reason, evs[0].Message, policy)
				}
			}
			if e := got["refused-00"]; len(e) > 0 {
				t.Logf("the Event: %s %s: %s", e[0].Type, e[0].Reason, e[0].Message)
			}
			if n := strings.Count(logs.String(), `msg="k8s: a write was refused; it is retried with backoff"`); n != refusedObjects {
				t.Errorf("%d warnings of a refused write, want one per refused Widget (%d)", n, refusedObjects)
			}

			// Stopping saves the work left, the records of the refused
			// Widgets with it: Run reports each record refused, and
			// nothing else. The bus knows nothing of unclaimed objects.
			op.once.Do(func() {
				op.cancel()
				var err error
				select {
				case err = <-op.done:
				case <-time.After(30 * time.Second):
					t.Fatal("Run did not return within 30s of its context ending")
				}
				var lines []string
				if err != nil {
					lines = strings.Split(err.Error(), "\n")
				}
				if !tc.status && !tc.claim {
					want := refusedObjects
					for _, l := range lines {
						if strings.Contains(l, "/refused-") && strings.Contains(l, tc.message) {
							want--
						}
					}
					if want != 0 || len(lines) != refusedObjects {
						t.Errorf("Run: %v; want the %d refused records, one a line", err, refusedObjects)
					}
				} else if err != nil {
					t.Errorf("Run: %v", err)
				}
			})
			if t.Failed() {
				t.Logf("the operator's log:\n%s", logs.String())
			}
		})
	}
}

// handledAt reports whether the Ready condition and the condition of
// handler h on the Widget name show generation gen handled.
func handledAt(t *testing.T, c dynamic.Interface, ns, name string, gen int64) bool {
	t.Helper()
	conds := conditionsOf(get(t, c, widgetsGVR, ns, name))
	for _, typ := range []string{k8s.ConditionReady, "H"} {
		if cond, ok := conds[typ]; !ok || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != gen {
			return false
		}
	}
	return true
}

// refusalEvents returns the Events of reason in ns, by the name of their
// object.
func refusalEvents(t *testing.T, c dynamic.Interface, ns, reason string) map[string][]corev1.Event {
	t.Helper()
	list, err := c.Resource(eventsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]corev1.Event{}
	for _, u := range list.Items {
		var e corev1.Event
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &e); err != nil {
			t.Fatal(err)
		}
		if e.Reason == reason {
			out[e.InvolvedObject.Name] = append(out[e.InvolvedObject.Name], e)
		}
	}
	return out
}

// formatRequests lists requests one a line, with their times relative to
// the first.
func formatRequests(list []request) string {
	var b strings.Builder
	for _, q := range list {
		fmt.Fprintf(&b, "  +%v %s %s → %d\n", q.at.Sub(list[0].at).Round(time.Millisecond), q.method, q.path, q.code)
	}
	return b.String()
}

// maxClaims returns how many times the claim of an object, refused from
// time 0, can be written within d: once, then once per retry of the claim
// queue's rate limiter (client-go's default controller rate limiter: 5 ms,
// doubling, at most 1000 s) due by d.
func maxClaims(d time.Duration) int {
	n, at, delay := 1, time.Duration(0), 5*time.Millisecond
	for {
		at += delay
		if at > d {
			return n
		}
		n++
		delay = min(2*delay, 1000*time.Second)
	}
}
