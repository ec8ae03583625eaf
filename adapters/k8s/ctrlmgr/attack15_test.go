package ctrlmgr_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"sync/atomic"

	"encoding/json"
	"fmt"
	"k8s.io/client-go/rest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/ctrlmgr"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestAttackReferencedInManager: a resource Referenced by another, in a
// Source inside a controller-runtime manager, relates as it does
// standalone: a ConfigMap's handler subscribed to the Secret its
// data.target names runs with the Secret's data.
func TestAttackReferencedInManager(t *testing.T) {
	for _, tc := range []struct {
		name string
		ns   bool
	}{{"all namespaces", false}, {"namespaced cache", true}} {
		t.Run(tc.name, func(t *testing.T) {
			env := kubetest.Shared(t)
			ns := env.Namespace(t)
			cfg := env.AdminConfig()
			kc := kubernetes.NewForConfigOrDie(cfg)
			copts := cache.Options{}
			if tc.ns {
				copts.DefaultNamespaces = map[string]cache.Config{ns: {}}
			}
			mgr, err := manager.New(cfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}, Cache: copts})
			if err != nil {
				t.Fatal(err)
			}
			m, err := k8s.NewMetrics(nil) // a registry of its own: the test makes two managers
			if err != nil {
				t.Fatal(err)
			}
			src, err := ctrlmgr.New(mgr, &k8s.Options{Logger: testLogger(t, "m"), Metrics: m, Resources: []k8s.Resource{
				{GVR: configMaps, Status: k8s.StatusAnnotation},
				{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Referenced: []k8s.Reference{{Kind: "ConfigMap", Field: "data.target"}}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			bus, err := opbus.New(src.BusOptions(nil))
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			seen := map[string]string{}
			if err := bus.Handle("see", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				b, _ := json.Marshal(ev.New[opbus.RelatedField])
				mu.Lock()
				seen[ev.Key.Name] = string(b)
				mu.Unlock()
				return opbus.Status{}, nil
			}, opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data.target", "related.Secret[*].data"}}); err != nil {
				t.Fatal(err)
			}
			if err := ctrlmgr.Add(mgr, src, bus); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			t.Cleanup(func() { cancel(); <-done })

			if _, err := kc.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v1"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := kc.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"target": "s"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.ns {
				// A cache of several namespaces gives informers without an
				// indexer: Run refuses Referenced, saying so, rather than
				// relating nothing.
				select {
				case err := <-done:
					done <- err
					if err == nil || !strings.Contains(err.Error(), "has no indexer") {
						t.Fatalf("the manager returned %v, want an error saying the informer has no indexer", err)
					}
					t.Logf("the manager returned: %v", err)
					return
				case <-time.After(10 * time.Second):
				}
			}
			eventually(t, "the ConfigMap's handler sees the Secret it names", func() error {
				mu.Lock()
				defer mu.Unlock()
				if s, ok := seen["c"]; !ok || !strings.Contains(s, "djE=") {
					return fmt.Errorf("related of c: %q (ran: %v)", s, ok)
				}
				return nil
			})
		})
	}
}

// TestAttackOwnedInNamespacedCache: in a manager whose cache watches one
// namespace, a ConfigMap's handler applies a Secret child; the child
// relates to its owner, and a run on a change the child does not depend
// on sends nothing (the cache, read through the manager's, holds it).
func TestAttackOwnedInNamespacedCache(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	cfg := env.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(cfg)
	var applies atomic.Int64
	mcfg := rest.CopyConfig(cfg)
	mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return rtFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && strings.Contains(req.Header.Get("Content-Type"), "apply-patch") && strings.Contains(req.URL.Path, "/secrets/") {
				applies.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	mgr, err := manager.New(mcfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := ctrlmgr.New(mgr, &k8s.Options{Logger: testLogger(t, "m"), Metrics: m, Resources: []k8s.Resource{
		{GVR: configMaps, Status: k8s.StatusAnnotation},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Owned: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen string
	runs, sent := 0, 0
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(bus.Handle("child", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		name, _ := opbus.Get[string](ev.New, "metadata.name")
		v, _ := opbus.Get[string](ev.New, "data.v")
		_, err := src.Client(ev).Apply(ctx, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "data": map[string]any{"v": base64.StdEncoding.EncodeToString([]byte(v))}})
		mu.Lock()
		runs++
		sent = int(applies.Load())
		mu.Unlock()
		return opbus.Status{}, err
	}, opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data"}}))
	must(bus.Handle("see", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		b, _ := json.Marshal(ev.New[opbus.RelatedField])
		mu.Lock()
		seen = string(b)
		mu.Unlock()
		return opbus.Status{}, nil
	}, opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"related.Secret[*].data"}}))
	must(ctrlmgr.Add(mgr, src, bus))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	if _, err := kc.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child related", func() error {
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(seen, `"v":"MQ=="`) {
			return fmt.Errorf("related: %s", seen)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	for i := range 3 {
		if _, err := kc.CoreV1().ConfigMaps(ns).Patch(t.Context(), "c", "application/merge-patch+json", fmt.Appendf(nil, `{"data":{"other":"%d"}}`, i), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d runs, %d applies sent", runs, sent)
	if runs < 4 || sent != 1 {
		t.Errorf("%d runs, %d applies of the unchanged child, want ≥ 4 runs and 1 apply", runs, sent)
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
