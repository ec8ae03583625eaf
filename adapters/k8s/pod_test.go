package k8s_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// terminated returns the first terminated container in a Pod's
// status.containerStatuses.
func terminated(pod map[string]any) (name string, exitCode any, reason any, ok bool) {
	st, _ := pod["status"].(map[string]any)
	l, _ := st["containerStatuses"].([]any)
	for _, e := range l {
		cs, _ := e.(map[string]any)
		state, _ := cs["state"].(map[string]any)
		if t, isT := state["terminated"].(map[string]any); isT {
			return fmt.Sprint(cs["name"]), t["exitCode"], t["reason"], true
		}
	}
	return "", nil, nil, false
}

// TestPodContainerTerminated is the case opbus exists for: a container
// dies, which changes only the Pod's status, and the handler subscribed to
// status.containerStatuses fires exactly once with that change (kopf's
// on.update never does: nolar/kopf#715, #706). The adapter's own writes —
// the record, the status annotation — fire nothing.
func TestPodContainerTerminated(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var crash, updates runs
	start(t, k8s.Options{
		Config:    env.AdminConfig(),
		Resources: []k8s.Resource{{GVR: podsGVR, Namespaces: []string{ns}}},
	}, func(b *opbus.Bus) {
		must(t, b.Handle("crash-watch", crash.handler(func(ev *opbus.Event) opbus.Status {
			if name, code, reason, ok := terminated(ev.New); ok {
				return opbus.Blocked(fmt.Sprintf("container %s terminated: exit %v (%v)", name, code, reason))
			}
			return opbus.Active("")
		}), opbus.On{Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}}))
		must(t, b.Handle("updates", updates.handler(nil), opbus.On{Types: []opbus.EventType{opbus.Update}}))
	})

	pod := createPod(t, c, ns, "web")
	eventually(t, "crash-watch runs on create", func() bool { return crash.count("crash-watch", "web", opbus.Create) == 1 })

	// The kubelet reports the container running, then terminated.
	patch(t, c, podsGVR, ns, "web", `{"status":{"containerStatuses":[{"name":"app","image":"busybox:1.36","imageID":"",
		"ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}]}}`, "status")
	eventually(t, "crash-watch runs when the container runs", func() bool { return crash.count("crash-watch", "web", opbus.Update) == 1 })
	begin := time.Now()
	patch(t, c, podsGVR, ns, "web", `{"status":{"containerStatuses":[{"name":"app","image":"busybox:1.36","imageID":"",
		"ready":false,"restartCount":0,"state":{"running":null,"terminated":{"exitCode":1,"reason":"Error",
		"startedAt":"2026-01-01T00:00:00Z","finishedAt":"2026-01-01T00:01:00Z"}}}]}}`, "status")
	eventually(t, "crash-watch runs when the container terminates", func() bool { return crash.count("crash-watch", "web", opbus.Update) == 2 })
	t.Logf("status patch → handler: %v", time.Since(begin).Round(time.Millisecond))

	ev := crash.of("crash-watch", "web", opbus.Update)[1]
	changes := ev.Changes.Under(opbus.MustParsePath("status.containerStatuses[name=app].state"))
	got := changes.String()
	want := "remove running (was {\"startedAt\":\"2026-01-01T00:00:00Z\"})\n" +
		"add terminated = {\"exitCode\":1,\"finishedAt\":\"2026-01-01T00:01:00Z\",\"reason\":\"Error\",\"startedAt\":\"2026-01-01T00:00:00Z\"}"
	if got != want {
		t.Errorf("changes under state:\n%s\nwant:\n%s\n(all changes: %v)", got, want, ev.Changes)
	}
	for _, c := range ev.Changes {
		if !strings.HasPrefix(c.Path.String(), "status.containerStatuses[name=app]") {
			t.Errorf("change outside the subscribed field: %v", c)
		}
	}
	eventually(t, "the whole-object update handler runs for both status patches", func() bool { return updates.count("updates", "web") == 2 })

	// The status annotation and an Event report the overall status.
	want2 := opbus.Blocked("container app terminated: exit 1 (Error)")
	eventually(t, "the status annotation shows the blocked container", func() bool {
		v, ok := annotationOf(get(t, c, podsGVR, ns, "web"), k8s.AnnotationStatus)
		var st opbus.Status
		return ok && json.Unmarshal([]byte(v), &st) == nil && st == want2
	})
	eventually(t, "a Warning event says Blocked", func() bool {
		l, err := c.Resource(podsGVR.GroupVersion().WithResource("events")).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range l.Items {
			var ev corev1.Event
			b, _ := json.Marshal(e.Object)
			if json.Unmarshal(b, &ev) == nil && ev.InvolvedObject.UID == pod.GetUID() && ev.Reason == "Blocked" && ev.Type == corev1.EventTypeWarning &&
				strings.Contains(ev.Message, want2.Message) {
				return true
			}
		}
		return false
	})

	// Nothing the adapter wrote runs a handler again.
	steady(t, "handler runs", 2*time.Second, func() string {
		return fmt.Sprintf("crash-watch %d, updates %d", crash.total(), updates.total())
	})
	if n := crash.count("crash-watch", "web"); n != 3 {
		t.Errorf("crash-watch ran %d times, want 3 (create, running, terminated)", n)
	}
}
