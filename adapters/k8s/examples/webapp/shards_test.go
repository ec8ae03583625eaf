package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestShardsReplicas runs three webapp processes with --shards (Leases of
// 4 s, renewed every 0.5 s), as a user with only what rbac.yaml grants, on
// the real API server, with its ShardedListAndWatch gate off and on. Once
// the ring has split the hash space between the three, 24 WebApps are
// created: each gets its Deployment from exactly one replica (read from
// the replicas' own logs of the workload handler's runs), and every
// replica handles some. One replica is then killed with SIGKILL and the
// WebApps are rolled to a new image: the other two take its WebApps on
// once its Lease expired, each WebApp is rolled by exactly one of them,
// and the killed replica's WebApps follow their Deployments' readiness.
// Another is stopped with SIGTERM (a clean exit) and the WebApps rolled
// again: the last replica handles them all and owns the 256 buckets.
// Every replica says once how it receives the objects, and none is
// refused anything.
func TestShardsReplicas(t *testing.T) {
	for _, gate := range []bool{false, true} {
		t.Run(fmt.Sprintf("ShardedListAndWatch=%v", gate), func(t *testing.T) { testShards(t, gate) })
	}
}

func testShards(t *testing.T, gate bool) {
	var env *kubetest.Env
	said := "the API server does not apply shard selectors"
	if gate {
		env = kubetest.StartWith(t, &kubetest.StartOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
		said = "the API server applies shard selectors"
	} else {
		env = kubetest.Shared(t)
	}
	env.InstallCRDFiles(t, "crd.yaml")
	cfg := env.AdminConfig()
	c := &cluster{ns: env.Namespace(t), dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg)}
	user := env.UserConfig(kubetest.OperatorUser)
	env.ApplyRBACFile(t, "rbac.yaml", c.ns, kubetest.OperatorUser)
	userDyn := dynamic.NewForConfigOrDie(user)
	eventually(t, "the authorizer knows the bindings", func() string {
		if _, err := userDyn.Resource(webapps).Namespace(c.ns).List(t.Context(), metav1.ListOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
	kubeconfig := env.WriteKubeconfig(t, user)
	args := []string{"--shards", "--debug", "--leader-election-namespace=" + c.ns, "--probe-interval=1h",
		"--leader-elect-lease-duration=4s", "--leader-elect-retry-period=500ms"}
	ps := []*operatorProcess{startOperator(t, kubeconfig, args...), startOperator(t, kubeconfig, args...), startOperator(t, kubeconfig, args...)}
	waitRing(t, ps)

	const apps = 24
	names := make([]string, apps)
	for i := range names {
		names[i] = fmt.Sprintf("app-%02d", i)
		c.createWebApp(t, names[i], map[string]any{"image": "web:1", "replicas": int64(1)})
	}
	c.waitImages(t, names, "web:1")
	byApp := handledOnce(t, ps, c.ns, names, "web:1")
	for i, p := range ps {
		if !slices.Contains(byApp, i) {
			t.Errorf("replica %d handled none of the %d WebApps: %v", i, apps, byApp)
		}
		if code, body := get(p.probes, "/readyz"); code != http.StatusOK {
			t.Errorf("replica %d: /readyz %d %s", i, code, body)
		}
	}

	handedOver := byApp
	signal(t, ps[0], syscall.SIGKILL)
	<-ps[0].done
	killed := time.Now()
	c.rollAll(t, names, "web:2")
	byApp = handledOnce(t, ps, c.ns, names, "web:2")
	t.Logf("SIGKILL of replica 0: its WebApps rolled to web:2 by the others %v after the kill", time.Since(killed).Round(time.Millisecond))
	for i, r := range byApp {
		if r == 0 {
			t.Errorf("%s rolled to web:2 by the killed replica", names[i])
		}
	}
	// The killed replica's WebApps follow their Deployments' readiness
	// on their new replica.
	for i, r := range handedOver {
		if r == 0 {
			c.setReady(t, names[i], 1, 1)
			eventually(t, names[i]+" Ready True on its new replica", c.wantCondition(t, names[i], "Ready", "True", "1 of 1"))
		}
	}

	termed := time.Now()
	ps[1].stop(t) // SIGTERM; fails the test on an unclean exit
	c.rollAll(t, names, "web:3")
	byApp = handledOnce(t, ps, c.ns, names, "web:3")
	t.Logf("SIGTERM of replica 1: every WebApp rolled to web:3 %v after the signal", time.Since(termed).Round(time.Millisecond))
	for i, r := range byApp {
		if r != 2 {
			t.Errorf("%s rolled to web:3 by replica %d, want the last one, 2", names[i], r)
		}
	}
	if n := ps[2].metric(t, "opbus_shard_buckets_owned"); n != 256 {
		t.Errorf("the last replica owns %v buckets, want all 256", n)
	}
	if n := ps[2].metric(t, "opbus_shard_handoffs_total", `direction="acquired"`); n < 2 {
		t.Errorf("the last replica counted %v hand-offs taking buckets on, want its first and at least one more", n)
	}
	for i, p := range ps {
		log := p.logText()
		if n := strings.Count(log, "k8s: shard ring: "+said); n != 1 {
			t.Errorf("replica %d said %d times %q, want once", i, n, said)
		}
		// RBAC's refusal names the user (the shared server's other tests
		// leave namespaces being deleted, where an Event is forbidden to
		// anyone).
		if strings.Contains(log, `forbidden: User "`) {
			t.Errorf("replica %d was refused something by RBAC:\n%s", i, log)
		}
	}
	if n := ps[2].metric(t, "opbus_shard_objects_not_owned_total"); !gate && n == 0 {
		t.Errorf("the last replica counted no objects not owned, though the server does not select")
	}
}

// waitRing waits until the replicas have split the 256 buckets of the hash
// space between them, each owning some.
func waitRing(t *testing.T, ps []*operatorProcess) {
	t.Helper()
	eventually(t, "the ring split between the replicas", func() string {
		var owned []float64
		sum := 0.0
		for _, p := range ps {
			code, _ := get(p.metrics, "/metrics")
			if code != http.StatusOK {
				return "a replica serves no metrics yet"
			}
			n := p.metric(t, "opbus_shard_buckets_owned")
			owned = append(owned, n)
			sum += n
		}
		if sum != 256 || slices.Contains(owned, 0) {
			return fmt.Sprintf("buckets owned %v", owned)
		}
		return ""
	})
}

// workloadRun matches a replica's --debug log line of a run of the
// workload handler, with the WebApp's namespace and name and the image it
// applied.
var workloadRun = regexp.MustCompile(`msg="opbus: handler succeeded" key="WebApp\.example\.opbus\.dev ([^/"]+)/([^"]+)" handler=workload .*Deployment runs (\S+) ×`)

// handledOnce returns, for each of names in namespace ns, the index of the replica that
// applied image for it, and fails the test unless exactly one replica did
// (it may have run more than once: the workload handler runs again when
// the uid of a child it created appears).
func handledOnce(t *testing.T, ps []*operatorProcess, ns string, names []string, image string) []int {
	t.Helper()
	by := make(map[string][]int)
	for i, p := range ps {
		for _, m := range workloadRun.FindAllStringSubmatch(p.logText(), -1) {
			if m[1] == ns && m[3] == image && !slices.Contains(by[m[2]], i) {
				by[m[2]] = append(by[m[2]], i)
			}
		}
	}
	out := make([]int, len(names))
	for i, n := range names {
		if len(by[n]) != 1 {
			t.Errorf("%s: image %s applied by replicas %v, want exactly one", n, image, by[n])
			out[i] = -1
			continue
		}
		out[i] = by[n][0]
	}
	return out
}

// rollAll sets every WebApp of names to image and waits until their
// Deployments run it.
func (c *cluster) rollAll(t *testing.T, names []string, image string) {
	t.Helper()
	for _, n := range names {
		c.patchWebApp(t, n, fmt.Sprintf(`{"spec":{"image":%q}}`, image))
	}
	c.waitImages(t, names, image)
}

// waitImages waits until the Deployment of every WebApp of names runs
// image.
func (c *cluster) waitImages(t *testing.T, names []string, image string) {
	t.Helper()
	eventually(t, "every Deployment at "+image, func() string {
		var behind []string
		for _, n := range names {
			d, err := c.kube.AppsV1().Deployments(c.ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil || d.Spec.Template.Spec.Containers[0].Image != image {
				behind = append(behind, n)
			}
		}
		if len(behind) > 0 {
			return fmt.Sprintf("%d behind: %v", len(behind), behind)
		}
		return ""
	})
}
