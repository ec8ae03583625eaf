package k8s_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestRefusedRecordBacksOff gives a Pod annotations that leave no room
// for a record: every save of it is refused for as long as they stay.
// The bus retries the save on its backoff's schedule, not faster, without
// running the handler again, and the adapter says why in a Warning Event
// on the Pod, once for as long as the reason stays the same.
func TestRefusedRecordBacksOff(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	period := failingPeriod(t)
	backoff := opbus.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Jitter: 0.01}

	var logs logBuffer
	var r runs
	startBus(t, k8s.Options{
		Config:    env.AdminConfig(),
		Resources: []k8s.Resource{{GVR: podsGVR, Namespaces: []string{ns}}},
		Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, opbus.Options{Backoff: backoff}, func(b *opbus.Bus) {
		must(t, b.Handle("h", r.handler(func(*opbus.Event) opbus.Status { return opbus.Blocked("stuck") }), opbus.On{}))
	})
	// Room for an empty record (the claim) and 8 bytes more.
	big := strings.Repeat("x", k8s.MaxAnnotationBytes-len("example.com/big")-len(k8s.AnnotationRecord)-8)
	p := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"example.com/big":%q}},
		"spec":{"containers":[{"name":"app","image":"busybox:1.36"}]}}`, big)
	if _, err := c.Resource(podsGVR).Namespace(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler runs", func() bool { return r.count("h", "p") > 0 })
	begin := time.Now()
	time.Sleep(period)
	elapsed := time.Since(begin)
	saves := strings.Count(logs.String(), `msg="opbus: saving record"`)
	bound := maxRuns(backoff, elapsed) + 1
	t.Logf("over %v: %d refused saves (the schedule allows %d), %d handler runs", elapsed.Round(time.Millisecond), saves, bound, r.count("h", "p"))
	if saves > bound {
		t.Errorf("%d refused saves in %v; the backoff allows %d", saves, elapsed, bound)
	}
	if saves < 2 {
		t.Errorf("%d refused saves in %v: the save is not retried", saves, elapsed)
	}
	if n := r.count("h", "p"); n != 1 {
		t.Errorf("the handler ran %d times, want once: its result waits in memory for the save", n)
	}
	// Room again: the next retry saves the record, and the operator stops
	// cleanly.
	patch(t, c, podsGVR, ns, "p", `{"metadata":{"annotations":{"example.com/big":null}}}`)
	eventually(t, "the record is saved", func() bool {
		_, _, ok := recordOf(get(t, c, podsGVR, ns, "p"))
		return ok
	})
	events := schema.GroupVersionResource{Version: "v1", Resource: "events"}
	list, err := c.Resource(events).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, e := range list.Items {
		if reason, _, _ := unstructuredString(e.Object, "reason"); reason == "RecordRefused" {
			msg, _, _ := unstructuredString(e.Object, "message")
			refused = append(refused, msg)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "256 KiB") {
		t.Errorf("events RecordRefused: %q; want one that names the limit", refused)
	}
}

func unstructuredString(obj map[string]any, field string) (string, bool, error) {
	v, ok := obj[field].(string)
	if !ok {
		return "", false, fmt.Errorf("%s is not a string", field)
	}
	return v, true, nil
}
