package k8s

import (
	"time"

	"github.com/opbus/opbus"
)

// observers is an [opbus.Observer] that passes every call on to each of
// its members in turn, and [opbus.TimerObserver.TimerDue] to those that
// implement it. [Source.BusOptions] makes one of the user's Observer,
// [Options].Metrics and the adapter's own (the Events of handler
// failures), so that each hears everything.
type observers []opbus.Observer

var _ opbus.TimerObserver = observers(nil)

// Observed implements [opbus.Observer].
func (os observers) Observed(key opbus.Key, queued int) {
	for _, o := range os {
		o.Observed(key, queued)
	}
}

// Coalesced implements [opbus.Observer].
func (os observers) Coalesced(key opbus.Key) {
	for _, o := range os {
		o.Coalesced(key)
	}
}

// Handled implements [opbus.Observer].
func (os observers) Handled(key opbus.Key, handler string, attempt int, took time.Duration, err error) {
	for _, o := range os {
		o.Handled(key, handler, attempt, took, err)
	}
}

// Retrying implements [opbus.Observer].
func (os observers) Retrying(key opbus.Key, after time.Duration) {
	for _, o := range os {
		o.Retrying(key, after)
	}
}

// TimerDue implements [opbus.TimerObserver].
func (os observers) TimerDue(key opbus.Key, handler string, late time.Duration) {
	for _, o := range os {
		if t, ok := o.(opbus.TimerObserver); ok {
			t.TimerDue(key, handler, late)
		}
	}
}

// observerOf returns one Observer for the non-nil ones of all: the one
// itself if there is one, a fan-out if there are more.
func observerOf(all ...opbus.Observer) opbus.Observer {
	var os observers
	for _, o := range all {
		if o != nil {
			os = append(os, o)
		}
	}
	if len(os) == 1 {
		return os[0]
	}
	return os
}
