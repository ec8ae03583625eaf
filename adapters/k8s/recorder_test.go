package k8s

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opbus/opbus"
)

func TestEventMessageCutOnCharacter(t *testing.T) {
	tests := []struct {
		name string
		msg  string
	}{
		{"ascii", strings.Repeat("a", 2000)},
		{"two-byte characters", strings.Repeat("é", 1000)},                      // 2000 bytes; 1024 is a boundary
		{"three-byte characters", strings.Repeat("日", 700)},                     // 1023 falls after 341 characters
		{"four-byte characters after one byte", "x" + strings.Repeat("🙂", 300)}, // 1024 splits one
	}
	s, _, _ := fakeSource(t, pods, "Pod", StatusAnnotation)
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "ns"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.newEvent(u, corev1.EventTypeNormal, "Blocked", tt.msg).Message
			if !utf8.ValidString(got) {
				t.Errorf("message of %d bytes is not valid UTF-8: ends in %q", len(got), got[len(got)-4:])
			}
			if len(got) > maxEventMessage || len(got) < maxEventMessage-3 {
				t.Errorf("message of %d bytes, want at most %d and no more than a character less", len(got), maxEventMessage)
			}
			if !strings.HasPrefix(tt.msg, got) {
				t.Errorf("message is not a prefix of the original")
			}
		})
	}
	if got := truncate("日本", 4); got != "日" {
		t.Errorf("truncate(日本, 4) = %q, want 日", got)
	}
}

// podEvents lists the Events of the fake clientset.
func podEvents(t *testing.T, s *Source) []corev1.Event {
	t.Helper()
	l, err := s.events.Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestEventsAggregatedAndLimited(t *testing.T) {
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "uid": "u1"}}}
	s, _, _ := fakeSource(t, pods, "Pod", StatusAnnotation, pod)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.eventLog.now = func() time.Time { return now }
	ctx := context.Background()
	r := s.kinds["Pod"]

	// 20 flips between two statuses: two Events, each counted 10 times.
	blocked, active := opbus.Blocked("container app terminated"), opbus.Active("running")
	for i := range 20 {
		now, was := blocked, active
		if i%2 == 1 {
			now, was = active, blocked
		}
		s.emit(ctx, r, pod.DeepCopy(), now, was)
	}
	evs := podEvents(t, s)
	if len(evs) != 2 {
		t.Fatalf("%d events for 20 flips between two statuses, want 2", len(evs))
	}
	for _, e := range evs {
		if e.Count != 10 {
			t.Errorf("event %s %q: count %d, want 10", e.Reason, e.Message, e.Count)
		}
	}

	// Distinct messages: 25 in a burst (5 of the bucket are left), then one per 5 minutes.
	for i := range 30 {
		s.emit(ctx, r, pod.DeepCopy(), opbus.Blocked("attempt "+string(rune('A'+i))), active)
	}
	if n := len(podEvents(t, s)); n != 2+5 {
		t.Errorf("%d events after 30 distinct ones, want %d: a burst of %d per object", n, 2+5, eventBurst)
	}
	now = now.Add(eventRefill)
	s.emit(ctx, r, pod.DeepCopy(), opbus.Blocked("later"), active)
	s.emit(ctx, r, pod.DeepCopy(), opbus.Blocked("later still"), active)
	if n := len(podEvents(t, s)); n != 8 {
		t.Errorf("%d events 5 minutes later, want 8: one more per %v", n, eventRefill)
	}

	// Another object has a bucket of its own.
	other := pod.DeepCopy()
	other.SetName("db")
	other.SetUID("u2")
	s.emit(ctx, r, other, blocked, active)
	if n := len(podEvents(t, s)); n != 9 {
		t.Errorf("%d events, want 9: another object is not limited by the first's", n)
	}
}
