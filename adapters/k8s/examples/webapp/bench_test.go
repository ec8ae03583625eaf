package main

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// BenchmarkReadyLatency measures, against the real API server, the time
// from a patch of a WebApp's Deployment's status to the WebApp's Ready
// condition saying so: each iteration patches readyReplicas to 1 (Ready
// becomes True) and back to 0 (Ready becomes False), and times both from
// just before the patch to the watch event of the WebApp carrying the new
// condition. It reports the 50th and 99th percentiles.
//
//	cd adapters/k8s/examples/webapp
//	OPBUS_KUBE_BIN=... go test -run '^$' -bench ReadyLatency -benchtime 200x
func BenchmarkReadyLatency(b *testing.B) {
	c, w := readyFixture(b)
	// ready waits for the WebApp's Ready condition to be status.
	ready := func(status string) {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev := <-w.ResultChan():
				if ev.Type == watch.Error {
					b.Fatalf("watch: %v", ev.Object)
				}
				if obj, ok := ev.Object.(*unstructured.Unstructured); ok {
					if cond := condition(obj, "Ready"); cond != nil && cond["status"] == status {
						return
					}
				}
			case <-timeout:
				b.Fatalf("Ready did not become %s within 30s", status)
			}
		}
	}
	if cond := condition(c.webApp(b, "bench"), "Ready"); cond == nil || cond["status"] != "False" {
		ready("False")
	}

	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, step := range []struct {
			ready  int32
			status string
		}{{1, "True"}, {0, "False"}} {
			start := time.Now()
			c.setReady(b, "bench", 1, step.ready)
			ready(step.status)
			lat = append(lat, time.Since(start))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
	b.Logf("%d status patches: p50 %v, p99 %v, max %v", len(lat), lat[len(lat)/2], lat[(len(lat)*99)/100], lat[len(lat)-1])
}

// The operator the benchmark measures, run once for every call of it (the
// testing package calls a benchmark several times, and a process has one
// controller-runtime metrics registry): a manager with webapp's handlers,
// a WebApp "bench" of one replica, its Deployment, and a watch of the
// WebApp.
var (
	fixtureOnce sync.Once
	fixture     *cluster
	fixtureW    watch.Interface
)

func readyFixture(b *testing.B) (*cluster, watch.Interface) {
	fixtureOnce.Do(func() {
		ctrl.SetLogger(logr.Discard())
		env, c := newCluster(b)
		cfg := env.AdminConfig()
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
		if err != nil {
			b.Fatal(err)
		}
		if err := setup(mgr, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour, time.Second, nil); err != nil {
			b.Fatal(err)
		}
		// It runs until the process exits, after the last benchmark.
		go func() { _ = mgr.Start(context.Background()) }()
		c.createWebApp(b, "bench", map[string]any{"image": "nginx:1.27", "replicas": int64(1)})
		w, err := c.dyn.Resource(webapps).Namespace(c.ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=bench"})
		if err != nil {
			b.Fatal(err)
		}
		waitDeployment(b, c, "bench")
		fixture, fixtureW = c, w
	})
	if fixture == nil {
		b.Fatal("the benchmark's operator did not start (see the first call)")
	}
	return fixture, fixtureW
}

// waitDeployment waits until the operator created the Deployment name.
func waitDeployment(b *testing.B, c *cluster, name string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			return
		} else if time.Now().After(deadline) {
			b.Fatalf("no Deployment %s: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
