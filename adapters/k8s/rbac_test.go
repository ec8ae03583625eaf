package k8s_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestRBACCustomResource runs an operator on Widgets, with conditions, a
// finalizer and leader election, as a user whose only permissions are
// those of testdata/rbac-widgets.yaml. Every request it makes is
// recorded: none is refused, none is outside the Role, and every verb the
// Role grants is used, but for two that client-go and the adapter use
// only in some cases, which the test logs when they are not: get, after a
// conflict (which a second writer of the Widget's status provokes), and
// list, which informers fall back to where the server cannot stream the
// initial list through the watch.
func TestRBACCustomResource(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	admin := dynClient(t, env.AdminConfig())

	granted := applyRole(t, admin, "testdata/rbac-widgets.yaml", ns, kubetest.OperatorUser)
	var log requestLog
	userCfg := env.UserConfig(kubetest.OperatorUser)
	userCfg.WrapTransport = log.wrap
	probe := dynClient(t, env.UserConfig(kubetest.OperatorUser))
	eventually(t, "the authorizer knows the binding", func() bool {
		_, err := probe.Resource(widgetsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		return err == nil
	})
	if _, err := probe.Resource(podsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing pods as %s: got %v, want Forbidden: the user must have no other permission", kubetest.OperatorUser, err)
	}

	var r runs
	le := &k8s.LeaderElection{Namespace: ns, Name: "widgets", Identity: "rbac-test",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
	op := start(t, k8s.Options{
		Config:         userCfg,
		Resources:      []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}, Finalizer: true}},
		LeaderElection: le,
	}, func(b *opbus.Bus) {
		must(t, b.Handle("size", r.handler(sizeStatus), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		must(t, b.Handle("cleanup", r.handler(nil), opbus.On{Kinds: []string{widgetKind}, Types: []opbus.EventType{opbus.Delete}}))
	})

	createWidget(t, admin, ns, "w", `{"size":5}`)
	waitConditions(t, admin, ns, "w", metav1.ConditionFalse, "size 5 is over 3")
	if !slices.Contains(get(t, admin, widgetsGVR, ns, "w").GetFinalizers(), k8s.Finalizer) {
		t.Errorf("no finalizer %s on the widget", k8s.Finalizer)
	}
	// Changes of size while another writer updates the status: the
	// adapter's conditions patches conflict and it reads the widget again.
	stopWriter := statusWriter(t, admin, ns, "w")
	for size := 6; size <= 12; size++ {
		patch(t, admin, widgetsGVR, ns, "w", fmt.Sprintf(`{"spec":{"size":%d}}`, size))
		time.Sleep(50 * time.Millisecond)
	}
	patch(t, admin, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	waitConditions(t, admin, ns, "w", metav1.ConditionTrue, "size 2")
	stopWriter()

	if err := admin.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delete handler runs and the widget goes", func() bool {
		_, err := admin.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), "w", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && r.count("cleanup", "w") == 1
	})
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	if h, _, _ := unstructured.NestedString(get(t, admin, leases, ns, "widgets").Object, "spec", "holderIdentity"); h != "rbac-test" {
		t.Errorf("Lease held by %q, want rbac-test", h)
	}
	op.stop(t) // releases the Lease: an update

	used, refused := log.result()
	for _, req := range refused {
		t.Errorf("refused: %s", req)
	}
	for _, u := range slices.Sorted(maps.Keys(used)) {
		if !granted[u] {
			t.Errorf("the operator made a request the Role does not grant: %s", u)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(granted)) {
		switch {
		case used[g]:
		case g == "test.opbus.dev widgets get":
			t.Logf("%s was not used: no conditions patch conflicted in this run", g)
		case g == " events patch":
			t.Logf("%s was not used: no Event was repeated in this run", g)
		case g == "test.opbus.dev widgets list" && used["test.opbus.dev widgets watch"]:
			// client-go's informers list through a watch (a streaming
			// list) where the server supports it, and fall back to list.
			t.Logf("%s was not used: the informer listed through its watch", g)
		default:
			t.Errorf("the Role grants %s, which the operator never used: it is not minimal", g)
		}
	}
	t.Logf("requests by verb: %v", log.counts())
}

// sizeStatus blocks on a spec.size over 3.
func sizeStatus(ev *opbus.Event) opbus.Status {
	size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
	if size > 3 {
		return opbus.Blocked(fmt.Sprintf("size %d is over 3", size))
	}
	return opbus.Active(fmt.Sprintf("size %d", size))
}

// waitConditions waits until the widget's Ready and size conditions both
// have the given status and message, for its current generation.
func waitConditions(t *testing.T, cl dynamic.Interface, ns, name string, status metav1.ConditionStatus, msg string) {
	t.Helper()
	var last error
	ok := func() bool {
		u := get(t, cl, widgetsGVR, ns, name)
		conds := conditionsOf(u)
		for _, typ := range []string{k8s.ConditionReady, k8s.ConditionType("size")} {
			cd, found := conds[typ]
			switch {
			case !found:
				last = fmt.Errorf("no condition %s", typ)
				return false
			case cd.Status != status || cd.Message != msg || cd.ObservedGeneration != u.GetGeneration():
				last = fmt.Errorf("condition %s: %s %q for generation %d, want %s %q for generation %d",
					typ, cd.Status, cd.Message, cd.ObservedGeneration, status, msg, u.GetGeneration())
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(waitFor)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("conditions of %s: %v", name, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// statusWriter patches status.beat of a widget, through the status
// subresource, until the returned function is called; it returns the
// last beat written.
func statusWriter(t *testing.T, cl dynamic.Interface, ns, name string) (stop func() int64) {
	t.Helper()
	var quit atomic.Bool
	var beat atomic.Int64
	done := make(chan error, 1)
	go func() {
		for !quit.Load() {
			n := beat.Load() + 1
			_, err := cl.Resource(widgetsGVR).Namespace(ns).Patch(t.Context(), name, types.MergePatchType,
				fmt.Appendf(nil, `{"status":{"beat":%d}}`, n), metav1.PatchOptions{}, "status")
			if err != nil {
				done <- fmt.Errorf("status writer: %w", err)
				return
			}
			beat.Store(n)
			time.Sleep(2 * time.Millisecond)
		}
		done <- nil
	}()
	return func() int64 {
		t.Helper()
		quit.Store(true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return beat.Load()
	}
}

// applyRole creates the Role and RoleBinding of the manifest at path in
// namespace ns, with the binding's subjects replaced by user. It returns
// what the Role grants, as "group resource verb" strings.
func applyRole(t *testing.T, cl dynamic.Interface, path, ns, user string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rbac := func(res string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: res}
	}
	granted := map[string]bool{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(j, &u.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		u.SetNamespace(ns)
		var gvr schema.GroupVersionResource
		switch u.GetKind() {
		case "Role":
			gvr = rbac("roles")
			var role struct {
				Rules []struct{ APIGroups, Resources, Verbs []string }
			}
			if err := json.Unmarshal(j, &role); err != nil {
				t.Fatal(err)
			}
			for _, rule := range role.Rules {
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							granted[g+" "+res+" "+v] = true
						}
					}
				}
			}
		case "RoleBinding":
			gvr = rbac("rolebindings")
			u.Object["subjects"] = []any{map[string]any{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}}
		default:
			t.Fatalf("%s: unexpected kind %s: the operator's permissions are namespaced", path, u.GetKind())
		}
		if _, err := cl.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	return granted
}

// requestLog records the API requests of a client, as "group resource
// verb" strings, and those the API server refused.
type requestLog struct {
	mu      sync.Mutex
	used    map[string]int
	refused []string
}

// wrap is a rest.Config WrapTransport.
func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		what, ok := requestOf(req)
		if !ok {
			return resp, err // discovery
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.used == nil {
			l.used = map[string]int{}
		}
		l.used[what]++
		if err == nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized) {
			l.refused = append(l.refused, fmt.Sprintf("%s %s: %s", req.Method, req.URL.Path, resp.Status))
		}
		return resp, err
	})
}

func (l *requestLog) result() (used map[string]bool, refused []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	used = map[string]bool{}
	for k := range l.used {
		used[k] = true
	}
	return used, slices.Clone(l.refused)
}

func (l *requestLog) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.used)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// requestOf names the resource request req makes as "group resource verb"
// (resource with its subresource: "widgets/status"), the way RBAC rules
// name them; ok is false for requests that are not about resources, such
// as discovery.
func requestOf(req *http.Request) (what string, ok bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1], parts[3:] // apis/group/version
	default:
		return "", false
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
		if len(parts) == 0 {
			parts = []string{"namespaces"}
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	resource, named := parts[0], len(parts) > 1
	if len(parts) > 2 {
		resource += "/" + parts[2]
	}
	var verb string
	switch req.Method {
	case http.MethodGet:
		switch {
		case named:
			verb = "get"
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "watch"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(req.Method)
	}
	return group + " " + resource + " " + verb, true
}
