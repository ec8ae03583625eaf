package k8s

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opbus/opbus"
)

// maxEventMessage bounds the message of an Event.
const maxEventMessage = 1024

// event returns the core/v1 Event that reports a change of an object's
// overall status: reason the status's own ([opbus.Status].Reason) or else
// the level in CamelCase ("Blocked"), type Warning for blocked and error,
// Normal otherwise.
func (s *Source) event(u *unstructured.Unstructured, now, was opbus.Status) *corev1.Event {
	typ := corev1.EventTypeNormal
	if now.Level >= opbus.LevelBlocked {
		typ = corev1.EventTypeWarning
	}
	msg := now.Message
	if msg == "" {
		msg = now.Level.String()
	}
	msg += " (was " + was.String() + ")"
	return s.newEvent(u, typ, statusReason(now), msg)
}

// newEvent returns a core/v1 Event about u.
func (s *Source) newEvent(u *unstructured.Unstructured, typ, reason, msg string) *corev1.Event {
	ns := u.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault // where Events of cluster-scoped objects go
	}
	msg = truncate(msg, maxEventMessage)
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
		Reason:         reason,
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
	s.record(ctx, s.event(u, now, was))
}

// Reasons of the Warning Events that report a write refused for good.
const (
	ReasonRecordRefused = "RecordRefused"
	ReasonStatusRefused = "StatusRefused"
)

// refusals remembers, per object and reason, the message of the last
// refusal reported, so that a refusal repeated at each retry is reported
// once.
type refusals struct {
	mu   sync.Mutex
	last map[refusalKey]string
}

type refusalKey struct {
	key    opbus.Key
	reason string
}

// refusedForGood reports whether err refuses a write in a way that
// retrying alone will not fix: the adapter's own size check, or the API
// server's refusal of the object as it would be (invalid, denied by an
// admission policy or webhook, forbidden, too large).
func refusedForGood(err error) bool {
	return errors.Is(err, ErrTooLarge) || errors.Is(err, ErrConditionsPruned) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) ||
		apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err)
}

// refused reports a write of the object of key that err refused: if it is
// refused for good, with a Warning Event of the reason on the object, once
// for as long as the message stays the same. The bus retries the write
// with its backoff (the claim queue, a claim). A nil err ends the refusal.
func (s *Source) refused(ctx context.Context, r *resource, key opbus.Key, reason string, err error) {
	k := refusalKey{key, reason}
	s.refusals.mu.Lock()
	if err == nil || !refusedForGood(err) {
		delete(s.refusals.last, k)
		s.refusals.mu.Unlock()
		return
	}
	msg := err.Error()
	if s.refusals.last[k] == msg {
		s.refusals.mu.Unlock()
		return
	}
	if s.refusals.last == nil {
		s.refusals.last = map[refusalKey]string{}
	}
	s.refusals.last[k] = msg
	s.refusals.mu.Unlock()
	u, ok := r.cached(key)
	if !ok {
		return
	}
	u = u.DeepCopy()
	if u.GetKind() == "" {
		u.SetAPIVersion(r.gvr.GroupVersion().String())
		u.SetKind(r.kind)
	}
	s.log.Warn("k8s: a write was refused; it is retried with backoff", "key", key.String(), "reason", reason, "err", err)
	s.record(ctx, s.newEvent(u, corev1.EventTypeWarning, reason, msg+" (retried with backoff)"))
}
