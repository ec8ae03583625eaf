package k8s

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// shardObjects creates n ConfigMaps in ns and returns their uids by name.
func shardObjects(t *testing.T, cfg kubernetes.Interface, ns string, n int) map[string]string {
	t.Helper()
	uids := map[string]string{}
	for i := range n {
		cm, err := cfg.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i), Labels: map[string]string{"shard-test": "yes"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[cm.Name] = string(cm.UID)
	}
	return uids
}

// TestServerShardsSelectWhatTheRingAssigns runs kube-apiserver with the
// ShardedListAndWatch gate on: for each of three members, a list with the
// member's shard selector echoes it in shardInfo (so serverShards says
// the server applies it) and returns exactly the objects whose uid hash
// the member's ranges hold, as the replica computes it; the members'
// lists together hold every object once. A watch with a member's selector
// receives only that member's new objects.
func TestServerShardsSelectWhatTheRingAssigns(t *testing.T) {
	t.Parallel()
	env := kubetest.StartWith(t, &kubetest.StartOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
	ns := env.Namespace(t)
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	uids := shardObjects(t, cs, ns, 60)
	ms := []string{"replica-a", "replica-b", "replica-c"}
	owners := assign(ms)
	seen := map[string]int{}
	for _, m := range ms {
		ranges := rangesOf(owners, m)
		sel := shardSelector(ranges)
		applied, err := serverShards(t.Context(), dyn, configMapsGVR, ns, sel)
		if err != nil {
			t.Fatal(err)
		}
		if !applied {
			t.Fatalf("%s: the server with the gate on did not echo the selector", m)
		}
		list, err := dyn.Resource(configMapsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{ShardSelector: sel, LabelSelector: "shard-test=yes"})
		if err != nil {
			t.Fatal(err)
		}
		if got := echoedShard(list); got != sel {
			t.Fatalf("%s: shardInfo echoes %q, want the selector sent", m, got)
		}
		var got, want []string
		for _, u := range list.Items {
			got = append(got, u.GetName())
			seen[u.GetName()]++
		}
		for name, uid := range uids {
			if inRanges(ranges, shardHash(uid)) {
				want = append(want, name)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the server selected %v, the ring assigns %v", m, got, want)
		}
		if len(got) == 0 {
			t.Errorf("%s: selected no objects of 60", m)
		}
	}
	for name := range uids {
		if seen[name] != 1 {
			t.Errorf("%s was listed by %d members, want 1", name, seen[name])
		}
	}

	// A watch with a's selector gets a's new objects and no others.
	ranges := rangesOf(owners, "replica-a")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w, err := dyn.Resource(configMapsGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{
		ShardSelector: shardSelector(ranges), LabelSelector: "shard-test=later", ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	mine := 0
	for i := range 30 {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("later-%03d", i), Labels: map[string]string{"shard-test": "later"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if inRanges(ranges, shardHash(string(cm.UID))) {
			mine++
		}
	}
	// A last object of a's, to know when the watch has caught up.
	var last string
	for i := 0; last == ""; i++ {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("mark-%03d", i), Labels: map[string]string{"shard-test": "later"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if inRanges(ranges, shardHash(string(cm.UID))) {
			last = cm.Name
			mine++
		}
	}
	got := 0
	for ev := range w.ResultChan() {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("watch event %s: %T", ev.Type, ev.Object)
		}
		if !ownsObject(ranges, u.Object) {
			t.Errorf("the watch of a's ranges delivered %s, not a's", u.GetName())
		}
		got++
		if u.GetName() == last {
			break
		}
	}
	if got != mine {
		t.Errorf("the watch delivered %d objects, want a's %d", got, mine)
	}
}

// TestServerWithoutGateIgnoresShards: on a server without the gate (the
// shared one) the selector is not echoed, so serverShards says the
// replica must filter on its side.
func TestServerWithoutGateIgnoresShards(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	dyn, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	sel := shardSelector(rangesOf(assign([]string{"a", "b"}), "a"))
	applied, err := serverShards(t.Context(), dyn, configMapsGVR, ns, sel)
	if err != nil {
		t.Fatal(err)
	}
	if applied {
		t.Fatal("the server without the gate echoed the shard selector")
	}
}
