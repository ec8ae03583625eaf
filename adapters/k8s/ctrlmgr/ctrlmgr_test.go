package ctrlmgr_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/ctrlmgr"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// replica is one operator process: a manager with the opbus runnable.
type replica struct {
	name            string
	mgr             manager.Manager
	src             *k8s.Source
	metrics, probes string // base URLs
	mu              sync.Mutex
	handled         []string // ConfigMaps the handler ran for
	cancel          context.CancelFunc
	done            chan error
}

func (r *replica) ran() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.handled...)
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// newReplica builds a manager as kubebuilder's main does (metrics and
// probe servers, leader election with a Lease in ns, a cache of the
// test's ConfigMaps) and
// adds the opbus Source to it with one handler of ConfigMaps' data.
func newReplica(t *testing.T, cfg *rest.Config, ns, name string, m *k8s.Metrics) *replica {
	t.Helper()
	r := &replica{name: name}
	maddr, paddr := freeAddr(t), freeAddr(t)
	r.metrics, r.probes = "http://"+maddr, "http://"+paddr
	var err error
	r.mgr, err = manager.New(cfg, manager.Options{
		Metrics:                       metricsserver.Options{BindAddress: maddr},
		HealthProbeBindAddress:        paddr,
		LeaderElection:                true,
		LeaderElectionID:              "ctrlmgr-test",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr(4 * time.Second),
		RenewDeadline:                 ptr(3 * time.Second),
		RetryPeriod:                   ptr(200 * time.Millisecond),
		Logger:                        logr.FromSlogHandler(testLogger(t, name).Handler()),
		// The Source watches what the cache watches: ConfigMaps of this
		// test only, by label.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"test": ns})},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.src, err = ctrlmgr.New(r.mgr, &k8s.Options{Logger: testLogger(t, name), Metrics: m, Resources: []k8s.Resource{{GVR: configMaps}}})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(r.src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = bus.Handle("note", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		r.mu.Lock()
		r.handled = append(r.handled, ev.Key.Name)
		r.mu.Unlock()
		return opbus.Active("noted"), nil
	}, opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrlmgr.Add(r.mgr, r.src, bus); err != nil {
		t.Fatal(err)
	}
	if err := r.mgr.AddMetricsServerExtraHandler("/explain", r.src.ExplainHandler()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *replica) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() {
		err := r.mgr.Start(ctx)
		t.Logf("%s: the manager returned %v", r.name, err)
		r.done <- err
	}()
	t.Cleanup(r.stop)
}

// stop stops the manager and waits for it; it may be called again.
func (r *replica) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	<-r.done
}

func ptr[T any](v T) *T { return &v }

// eventually polls cond every 50 ms until it returns nil, and fails the
// test with its last error after 30 s.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func createConfigMap(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	_, err := c.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": ns}}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestManagerReal runs two replicas of an operator, each a
// controller-runtime manager with the opbus runnable, against a real API
// server. The first takes the manager's Lease and handles a ConfigMap:
// its status annotation is written, the manager's /metrics shows
// opbus_handler_runs_total and the opbus_handler_duration_seconds
// histogram next to controller-runtime's own metrics, and its /readyz
// passes with the opbus check listed; /explain, mounted on the manager's
// metrics server with AddMetricsServerExtraHandler, explains the
// ConfigMap's handler as handled. The second, a standby, is ready and
// runs no handler; once the first stops (releasing the Lease), the second
// leads and handles a ConfigMap created then, and not again the one the
// first handled (its record is on the object).
func TestManagerReal(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	cfg := env.AdminConfig()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	first := newReplica(t, cfg, ns, "first", nil)
	first.start(t)
	eventually(t, "the first replica leads", func() error {
		select {
		case <-first.mgr.Elected():
			return nil
		default:
			return errors.New("not elected")
		}
	})
	// One process, one metrics.Registry, which holds the first's metrics:
	// the standby's are on a registry of their own.
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	second := newReplica(t, cfg, ns, "second", m)
	second.start(t)

	createConfigMap(t, c, ns, "one")
	eventually(t, "the leader handles ConfigMap one", func() error {
		if got := first.ran(); len(got) != 1 || got[0] != "one" {
			return fmt.Errorf("first ran for %v, want [one]", got)
		}
		cm, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), "one", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s := cm.Annotations[k8s.AnnotationStatus]; !strings.Contains(s, "noted") {
			return fmt.Errorf("status annotation %q, want the handler's message", s)
		}
		return nil
	})

	eventually(t, "the manager's /metrics shows opbus' and controller-runtime's metrics", func() error {
		code, body, err := get(first.metrics + "/metrics")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/metrics: %d", code)
		}
		for _, want := range []string{
			`opbus_handler_runs_total{handler="note",kind="ConfigMap"} 1`,
			`opbus_handler_duration_seconds_count{handler="note",kind="ConfigMap"} 1`,
			`opbus_leader 1`,
			`leader_election_master_status{`,
			`rest_client_requests_total`,
		} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("/metrics lacks %s", want)
			}
		}
		return nil
	})

	eventually(t, "the manager's metrics server explains ConfigMap one", func() error {
		code, body, err := get(first.metrics + "/explain?kind=ConfigMap&namespace=" + ns + "&name=one")
		if err != nil {
			return err
		}
		var why opbus.Explanation
		if code != http.StatusOK || json.Unmarshal([]byte(body), &why) != nil {
			return fmt.Errorf("/explain: %d %s", code, body)
		}
		if len(why.Handlers) != 1 || why.Handlers[0].Reason != opbus.ReasonHandled || why.Handlers[0].Slot == nil || why.Handlers[0].Slot.Message != "noted" {
			return fmt.Errorf("/explain: got %+v, want note handled, its slot noted", why.Handlers)
		}
		return nil
	})

	for _, r := range []*replica{first, second} {
		eventually(t, r.name+": /readyz passes with the opbus check", func() error {
			code, body, err := get(r.probes + "/readyz?verbose")
			if err != nil {
				return err
			}
			if code != http.StatusOK || !strings.Contains(body, "[+]opbus ok") {
				return fmt.Errorf("/readyz?verbose: %d %q, want 200 with [+]opbus ok (the Source's Ready: %v)", code, body, r.src.Ready())
			}
			return nil
		})
		if code, _, err := get(r.probes + "/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("%s: /healthz: %d %v, want 200", r.name, code, err)
		}
	}
	if got := second.ran(); len(got) != 0 {
		t.Fatalf("the standby ran its handler for %v while the first led", got)
	}
	if second.src.Leading() {
		t.Fatal("the standby's Source reports Leading while the first leads")
	}

	first.stop()
	if first.src.Leading() {
		t.Error("the first replica's Source still reports Leading after its manager stopped")
	}
	createConfigMap(t, c, ns, "two")
	eventually(t, "the standby takes over and handles ConfigMap two", func() error {
		if got := second.ran(); len(got) != 1 || got[0] != "two" {
			return fmt.Errorf("second ran for %v, want [two]", got)
		}
		return nil
	})
	if got := first.ran(); len(got) != 1 {
		t.Errorf("the first replica ran for %v after it stopped, want [one] only", got)
	}
}

type tlog struct {
	t    *testing.T
	name string
}

func (w tlog) Write(b []byte) (int, error) {
	w.t.Log(w.name + ": " + strings.TrimSpace(string(b)))
	return len(b), nil
}

func testLogger(t *testing.T, name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlog{t, name}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestManagerNamespacedCacheReal: a manager whose cache watches some
// namespaces runs one informer per namespace; the Source handles the
// objects of those namespaces, reading them through the cache, and no
// others.
func TestManagerNamespacedCacheReal(t *testing.T) {
	env := kubetest.Shared(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	cfg := env.AdminConfig()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(cfg, manager.Options{
		Logger:  logr.FromSlogHandler(testLogger(t, "mgr").Handler()),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := k8s.NewMetrics(nil) // a registry of its own: TestManagerReal's are on metrics.Registry
	if err != nil {
		t.Fatal(err)
	}
	src, err := ctrlmgr.New(mgr, &k8s.Options{Logger: testLogger(t, "src"), Metrics: m, Resources: []k8s.Resource{{GVR: configMaps}}})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var handled []string
	err = bus.Handle("note", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		mu.Lock()
		handled = append(handled, ev.Key.Namespace+"/"+ev.Key.Name)
		mu.Unlock()
		return opbus.Active("noted"), nil
	}, opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrlmgr.Add(mgr, src, bus); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager returned %v", err)
		}
	}()

	createConfigMap(t, c, other, "outside")
	createConfigMap(t, c, ns, "inside")
	eventually(t, "the ConfigMap of the cache's namespace is handled and its status written", func() error {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), "inside", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s := cm.Annotations[k8s.AnnotationStatus]; !strings.Contains(s, "noted") {
			return fmt.Errorf("status annotation %q, want the handler's message", s)
		}
		return src.Ready()
	})
	mu.Lock()
	got := strings.Join(handled, " ")
	mu.Unlock()
	if want := ns + "/inside"; got != want {
		t.Errorf("handled %q, want %q", got, want)
	}
	cm, err := c.CoreV1().ConfigMaps(other).Get(t.Context(), "outside", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Annotations[k8s.AnnotationRecord]; ok {
		t.Errorf("the ConfigMap outside the cache's namespaces was claimed: %v", cm.Annotations)
	}
}
