package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAttackWebAppEdges: a WebApp of 0 replicas created before the
// operator starts, and one whose healthURL hangs longer than the probe
// interval. The first gets its children and Ready True (0 of 0); the
// second's Health goes False, and its readiness follows its Deployment
// within the poll's timeout (200ms here: a WebApp's handlers run one at a
// time, so a poll that hangs holds the readiness handler back until it
// gives up); nothing is written while nothing changes.
func TestAttackWebAppEdges(t *testing.T) {
	env, c := newCluster(t)
	kubeconfig := env.WriteKubeconfig(t, nil)
	hang := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	hang.Start()
	t.Cleanup(func() { hang.CloseClientConnections(); hang.Close() })

	c.createWebApp(t, "early", map[string]any{"image": "nginx:1.27", "replicas": int64(0)})
	op := startOperator(t, kubeconfig, "--probe-interval=1s", "--probe-timeout=200ms", "--leader-elect=false")
	eventually(t, "early: Ready True 0 of 0", c.wantCondition(t, "early", "Ready", "True", "0 of 0"))
	if _, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), "early", metav1.GetOptions{}); err != nil {
		t.Fatalf("early's Deployment: %v", err)
	}
	n, found, _ := unstructured.NestedInt64(c.webApp(t, "early").Object, "status", "readyReplicas")
	t.Logf("early: status.readyReplicas %d (present %v); Available %v", n, found, condition(c.webApp(t, "early"), "Available"))

	c.createWebApp(t, "hang", map[string]any{"image": "nginx:1.27", "replicas": int64(1), "healthURL": hang.URL})
	eventually(t, "hang: Health False", c.wantCondition(t, "hang", "Health", "False", ""))
	t.Logf("hang: Health %v", condition(c.webApp(t, "hang"), "Health"))
	eventually(t, "hang: Ready False", c.wantCondition(t, "hang", "Ready", "False", "0 of 1"))

	// Readiness latency while the health poll hangs.
	var worst time.Duration
	for i := range 10 {
		ready := int32(i % 2)
		time.Sleep(230 * time.Millisecond) // spread the patches over the poll's phases
		start := time.Now()
		c.setReady(t, "hang", 1, ready)
		want, msg := "False", "0 of 1"
		if ready == 1 {
			want, msg = "True", "1 of 1"
		}
		eventually(t, "hang: Ready follows", c.wantCondition(t, "hang", "Ready", want, msg))
		d := time.Since(start)
		worst = max(worst, d)
		t.Logf("Ready %s after %v", want, d)
	}
	if worst > 500*time.Millisecond {
		t.Errorf("with a health poll that hangs and gives up after 200ms, the Ready condition follows the Deployment after up to %v (about 30 ms otherwise)", worst)
	}

	time.Sleep(2 * time.Second)
	before := c.resourceVersions(t, "hang") + " " + c.resourceVersions(t, "early")
	time.Sleep(3 * time.Second)
	if after := c.resourceVersions(t, "hang") + " " + c.resourceVersions(t, "early"); after != before {
		t.Errorf("objects written with nothing changed: before %s, after %s", before, after)
	}

	if code, body := get(op.probes, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
}
