package k8s

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opbus/opbus"
)

// ReasonHandlerFailed is the reason of the Warning Event emitted on an
// object each time a handler fails on it; the message names the handler
// and its error. Repeats of one failure (same handler, same error) are
// counted on one Event, as every Event of the adapter is.
const ReasonHandlerFailed = "HandlerFailed"

// failureQueue bounds the handler failures waiting for their Event;
// beyond it they are dropped (and logged at Debug), as the bus must not
// wait for the API server in its Observer.
const failureQueue = 256

// failure is a handler failure waiting for its Event.
type failure struct {
	key     opbus.Key
	handler string
	err     error
}

// failureEvents is the adapter's [opbus.Observer]: it hears of handler
// failures and emits a Warning Event of reason [ReasonHandlerFailed] for
// each on the object, from a goroutine of the running Source so that the
// bus never waits. Its other methods do nothing.
type failureEvents struct {
	s     *Source
	queue chan failure
}

var _ opbus.Observer = (*failureEvents)(nil)

func newFailureEvents(s *Source) *failureEvents {
	return &failureEvents{s: s, queue: make(chan failure, failureQueue)}
}

// Observed implements [opbus.Observer]; it does nothing.
func (f *failureEvents) Observed(opbus.Key, int) {}

// Coalesced implements [opbus.Observer]; it does nothing.
func (f *failureEvents) Coalesced(opbus.Key) {}

// Retrying implements [opbus.Observer]; it does nothing.
func (f *failureEvents) Retrying(opbus.Key, time.Duration) {}

// Handled implements [opbus.Observer]: the status fields the handler
// holds may go (heldstatus.go), and a failure is queued for its Event.
// A run cancelled by the bus's shutdown is not a failure of the handler.
func (f *failureEvents) Handled(key opbus.Key, handler string, _ int, _ time.Duration, err error) {
	f.s.sink.handled(key, handler)
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	select {
	case f.queue <- failure{key, handler, err}:
	default:
		f.s.log.Debug("k8s: too many handler failures waiting for their events; dropped", "key", key.String(), "handler", handler)
	}
}

// run emits the Events of queued failures until ctx is done.
func (f *failureEvents) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case fl := <-f.queue:
			f.emit(ctx, fl)
		}
	}
}

// emit emits the Event of one failure, on the object as the informer
// holds it; an object no longer there gets none.
func (f *failureEvents) emit(ctx context.Context, fl failure) {
	r, err := f.s.resourceFor(fl.key)
	if err != nil {
		return
	}
	u, ok := r.cached(fl.key)
	if !ok {
		return
	}
	u = u.DeepCopy()
	if u.GetKind() == "" {
		u.SetAPIVersion(r.gvr.GroupVersion().String())
		u.SetKind(r.kind)
	}
	msg := fmt.Sprintf("handler %s failed: %v", fl.handler, fl.err)
	f.s.record(ctx, f.s.newEvent(u, corev1.EventTypeWarning, ReasonHandlerFailed, msg))
}
