package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// eventsOf returns the Events in ns about the object of uid.
func eventsOf(t *testing.T, c dynamic.Interface, ns string, uid types.UID) []corev1.Event {
	t.Helper()
	l, err := c.Resource(eventsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range l.Items {
		var ev corev1.Event
		b, _ := json.Marshal(e.Object)
		if json.Unmarshal(b, &ev) == nil && ev.InvolvedObject.UID == uid {
			out = append(out, ev)
		}
	}
	return out
}

// byReason returns the Events of reason among evs.
func byReason(evs []corev1.Event, reason string) []corev1.Event {
	var out []corev1.Event
	for _, e := range evs {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// TestWidgetReasonAndLevelEvents: a handler's WithReason("TooBig") is the
// reason of its condition and of Ready; each change of the overall level of
// a Widget (written with conditions) emits one Event — Normal "Active" on
// the first status, Warning "TooBig" when it blocks, Normal "Active" again
// — and a change of message at the same level emits none.
func TestWidgetReasonAndLevelEvents(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var r runs
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("size", r.handler(func(ev *opbus.Event) opbus.Status {
				size, _, _ := unstructured.NestedInt64(ev.New, "spec", "size")
				if size > 3 {
					return opbus.Blocked(fmt.Sprintf("size %d is over 3", size)).WithReason("TooBig")
				}
				return opbus.Active(fmt.Sprintf("size %d", size))
			}), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		})
	w := createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "Ready is True", func() bool {
		return conditionsOf(get(t, c, widgetsGVR, ns, "w"))["Ready"].Status == metav1.ConditionTrue
	})
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":5}}`)
	var conds map[string]metav1.Condition
	eventually(t, "the conditions show the reason TooBig", func() bool {
		conds = conditionsOf(get(t, c, widgetsGVR, ns, "w"))
		return conds["Size"].Reason == "TooBig" && conds["Ready"].Reason == "TooBig"
	})
	if got := conds["Size"]; got.Status != metav1.ConditionFalse || got.Message != "size 5 is over 3" {
		t.Errorf("condition Size: %s %q, want False %q", got.Status, got.Message, "size 5 is over 3")
	}
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":6}}`) // same level, another message: no Event
	eventually(t, "size 6 shows", func() bool {
		return conditionsOf(get(t, c, widgetsGVR, ns, "w"))["Size"].Message == "size 6 is over 3"
	})
	patch(t, c, widgetsGVR, ns, "w", `{"spec":{"size":2}}`)
	eventually(t, "Ready is True again", func() bool {
		conds = conditionsOf(get(t, c, widgetsGVR, ns, "w"))
		return conds["Ready"].Status == metav1.ConditionTrue && conds["Ready"].Reason == "Active"
	})

	var evs []corev1.Event
	eventually(t, "three level Events", func() bool {
		evs = eventsOf(t, c, ns, w.GetUID())
		return len(evs) >= 3
	})
	steady(t, "the widget's Events", 2*time.Second, func() string {
		evs = eventsOf(t, c, ns, w.GetUID())
		var s []string
		for _, e := range evs {
			s = append(s, fmt.Sprintf("%s %s %d %q", e.Type, e.Reason, e.Count, e.Message))
		}
		return strings.Join(s, ", ")
	})
	blocked := byReason(evs, "TooBig")
	if len(blocked) != 1 || blocked[0].Type != corev1.EventTypeWarning || blocked[0].Count != 1 || !strings.HasPrefix(blocked[0].Message, "size 5 is over 3") {
		t.Errorf("TooBig Events %+v, want one Warning with the summary's message, count 1", blocked)
	}
	active := byReason(evs, "Active")
	if len(active) != 2 || active[0].Type != corev1.EventTypeNormal {
		t.Errorf("Active Events %+v, want two Normal ones (size 1, and size 2: different messages)", active)
	}
	if len(evs) != 3 {
		t.Errorf("%d Events, want 3 (a message change at the same level emits none): %+v", len(evs), evs)
	}
}

// TestWidgetHandlerFailureEvents: a handler that fails again and again on
// a Widget gives one Warning Event of reason HandlerFailed naming the
// handler and its error, whose count grows with the failures, rather than
// one Event per failure; the level change to error emits one Event.
func TestWidgetHandlerFailureEvents(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	var r runs
	bopts := opbus.Options{Backoff: opbus.Backoff{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond}}
	startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}}, bopts,
		func(b *opbus.Bus) {
			must(t, b.Handle("crash-watch", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				r.add(ev)
				return opbus.Status{}, errors.New("the backend is down")
			}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		})
	w := createWidget(t, c, ns, "w", `{"size":1}`)
	var failed []corev1.Event
	eventually(t, "the failures are counted on one Event", func() bool {
		failed = byReason(eventsOf(t, c, ns, w.GetUID()), k8s.ReasonHandlerFailed)
		return len(failed) == 1 && failed[0].Count >= 5
	})
	if runs := r.count("crash-watch", "w"); runs < int(failed[0].Count) {
		t.Errorf("%d failures counted, but the handler ran %d times", failed[0].Count, runs)
	}
	f := failed[0]
	t.Logf("%d failures so far, counted on 1 Event (count %d)", r.count("crash-watch", "w"), f.Count)
	if f.Type != corev1.EventTypeWarning || f.Message != "handler crash-watch failed: the backend is down" {
		t.Errorf("HandlerFailed Event: %s %q, want Warning naming the handler and the error", f.Type, f.Message)
	}
	if got := conditionsOf(get(t, c, widgetsGVR, ns, "w"))["CrashWatch"]; got.Reason != "Error" || got.Message != "the backend is down" {
		t.Errorf("condition CrashWatch: %s %q, want Error and the error", got.Reason, got.Message)
	}
	errs := byReason(eventsOf(t, c, ns, w.GetUID()), "Error")
	if len(errs) != 1 || errs[0].Count != 1 || errs[0].Type != corev1.EventTypeWarning {
		t.Errorf("level Events of reason Error: %+v, want one Warning, count 1, however often the handler fails", errs)
	}
}

// TestLegacyConditionTypesRemoved: a Widget carrying the conditions an
// earlier version wrote for slot crash-watch (type "crash-watch", reason a
// level's word) has that condition removed and CrashWatch written, while
// another writer's condition is kept.
func TestLegacyConditionTypesRemoved(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())

	createWidget(t, c, ns, "w", `{"size":1}`)
	old := `{"status":{"conditions":[
		{"type":"Ready","status":"False","reason":"Blocked","message":"old","lastTransitionTime":"2026-01-01T00:00:00Z"},
		{"type":"crash-watch","status":"False","reason":"Blocked","message":"old","lastTransitionTime":"2026-01-01T00:00:00Z"},
		{"type":"Progressing","status":"True","reason":"Rollout","message":"theirs","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	patch(t, c, widgetsGVR, ns, "w", old, "status")

	var r runs
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}},
		func(b *opbus.Bus) {
			must(t, b.Handle("crash-watch", r.handler(func(*opbus.Event) opbus.Status { return opbus.Active("watching") }),
				opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		})
	var conds map[string]metav1.Condition
	eventually(t, "CrashWatch written and crash-watch removed", func() bool {
		conds = conditionsOf(get(t, c, widgetsGVR, ns, "w"))
		_, legacy := conds["crash-watch"]
		return !legacy && conds["CrashWatch"].Message == "watching" && conds["Ready"].Status == metav1.ConditionTrue
	})
	if p := conds["Progressing"]; p.Message != "theirs" || p.Reason != "Rollout" {
		t.Errorf("another writer's condition Progressing: %+v, want it kept", p)
	}
	if len(conds) != 3 {
		t.Errorf("conditions %v, want Ready, CrashWatch and Progressing", conds)
	}
}

// TestConditionTypeClashRefused: two handlers whose ids give one condition
// type make Run fail at once, naming both.
func TestConditionTypeClashRefused(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Logger: testLogger(t), Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}})
	must(t, err)
	bus, err := opbus.New(src.BusOptions(nil))
	must(t, err)
	var r runs
	for _, id := range []string{"crash-watch", "crash_watch"} {
		must(t, bus.Handle(id, r.handler(nil), opbus.On{Kinds: []string{widgetKind}}))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = src.Run(ctx, bus)
	if err == nil || !strings.Contains(err.Error(), `"crash-watch"`) || !strings.Contains(err.Error(), `"crash_watch"`) || !strings.Contains(err.Error(), "CrashWatch") {
		t.Errorf("Run: %v, want an error naming both handlers and the type", err)
	}
}
