package k8s_test

import (
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestStatusFlipsAggregateEvents flips a ConfigMap's status 20 times: the
// Events are counted on the first of each kind, not created anew.
func TestStatusFlipsAggregateEvents(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	var r runs
	start(t, k8s.Options{
		Config:    env.AdminConfig(),
		Resources: []k8s.Resource{{GVR: cms, Namespaces: []string{ns}}},
	}, func(b *opbus.Bus) {
		must(t, b.Handle("state", r.handler(func(ev *opbus.Event) opbus.Status {
			if data, _ := ev.New["data"].(map[string]any); data["state"] == "bad" {
				return opbus.Blocked("state is bad")
			}
			return opbus.Active("")
		}), opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data.state"}}))
	})

	created, err := c.Resource(cms).Namespace(ns).Create(t.Context(),
		obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"flip"},"data":{"state":"good"}}`), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler runs on create", func() bool { return r.count("state", "flip") == 1 })
	for i := range 20 {
		state := "bad"
		if i%2 == 1 {
			state = "good"
		}
		patch(t, c, cms, ns, "flip", fmt.Sprintf(`{"data":{"state":%q}}`, state))
		eventually(t, fmt.Sprintf("flip %d is handled", i+1), func() bool { return r.count("state", "flip") == i+2 })
	}

	// One Event for the first status, and one for each of the two
	// changes, counted: 1 + 10 + 10.
	var got string
	eventually(t, "21 status changes are counted on 3 Events", func() bool {
		l, err := c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		var n, total int
		for _, e := range l.Items {
			var ev corev1.Event
			b, _ := json.Marshal(e.Object)
			if json.Unmarshal(b, &ev) != nil || ev.InvolvedObject.UID != created.GetUID() {
				continue
			}
			n++
			total += int(ev.Count)
		}
		got = fmt.Sprintf("%d events, counts summing to %d", n, total)
		return n == 3 && total == 21
	})
	t.Log(got)
}
