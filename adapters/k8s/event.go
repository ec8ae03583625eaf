package k8s

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opbus/opbus"
)

// maxEventMessage bounds the message of an Event.
const maxEventMessage = 1024

// event returns the core/v1 Event that reports a change of an object's
// overall status: reason the level in CamelCase ("Blocked"), type Warning
// for blocked and error, Normal otherwise.
func (s *Source) event(u *unstructured.Unstructured, now, was opbus.Status) *corev1.Event {
	ns := u.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault // where Events of cluster-scoped objects go
	}
	typ := corev1.EventTypeNormal
	if now.Level >= opbus.LevelBlocked {
		typ = corev1.EventTypeWarning
	}
	msg := now.Message
	if msg == "" {
		msg = now.Level.String()
	}
	msg += " (was " + was.String() + ")"
	if len(msg) > maxEventMessage {
		msg = msg[:maxEventMessage]
	}
	t := metav1.NewTime(time.Now())
	return &corev1.Event{
		// Named as client-go's recorder names Events: object and time.
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName() + "." + strconv.FormatInt(t.UnixNano(), 16), Namespace: ns},
		InvolvedObject: corev1.ObjectReference{
			APIVersion:      u.GetAPIVersion(),
			Kind:            u.GetKind(),
			Namespace:       u.GetNamespace(),
			Name:            u.GetName(),
			UID:             types.UID(u.GetUID()),
			ResourceVersion: u.GetResourceVersion(),
		},
		Reason:         reason(now.Level),
		Message:        msg,
		Type:           typ,
		Source:         corev1.EventSource{Component: s.name},
		FirstTimestamp: t,
		LastTimestamp:  t,
		Count:          1,
	}
}

// emit creates the Event for a change of overall status. Events are
// informative: a failure is logged, not returned, so that it never makes
// the bus write the status again.
func (s *Source) emit(ctx context.Context, r *resource, u *unstructured.Unstructured, now, was opbus.Status) {
	if u.GetKind() == "" {
		u.SetAPIVersion(r.gvr.GroupVersion().String())
		u.SetKind(r.kind)
	}
	ev := s.event(u, now, was)
	if _, err := s.events.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.log.Error("k8s: emitting an event", "object", u.GetNamespace()+"/"+u.GetName(), "reason", ev.Reason, "err", err)
	}
}
