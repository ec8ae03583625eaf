package k8s

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/opbus/opbus"
)

// countingObserver counts the calls it gets; it is not a TimerObserver.
type countingObserver struct{ observed, coalesced, handled, retrying int }

func (c *countingObserver) Observed(opbus.Key, int)                              { c.observed++ }
func (c *countingObserver) Coalesced(opbus.Key)                                  { c.coalesced++ }
func (c *countingObserver) Handled(opbus.Key, string, int, time.Duration, error) { c.handled++ }
func (c *countingObserver) Retrying(opbus.Key, time.Duration)                    { c.retrying++ }

// timerObserver is a countingObserver that hears of due timers too.
type timerObserver struct {
	countingObserver
	due int
}

func (t *timerObserver) TimerDue(opbus.Key, string, time.Duration) { t.due++ }

// TestObserversFanOut: every call reaches every member, TimerDue only
// those that take it; one member alone is used as it is.
func TestObserversFanOut(t *testing.T) {
	a, b := &countingObserver{}, &timerObserver{}
	o := observerOf(nil, a, b)
	k := opbus.Key{Kind: "Widget", Namespace: "ns", Name: "w"}
	o.Observed(k, 1)
	o.Coalesced(k)
	o.Handled(k, "h", 1, time.Millisecond, errors.New("x"))
	o.Retrying(k, time.Second)
	o.(opbus.TimerObserver).TimerDue(k, "h", 0)
	for _, c := range []*countingObserver{a, &b.countingObserver} {
		if *c != (countingObserver{1, 1, 1, 1}) {
			t.Errorf("member got %+v, want one call of each", *c)
		}
	}
	if b.due != 1 {
		t.Errorf("TimerDue reached the timer observer %d times, want 1", b.due)
	}
	if got := observerOf(nil, a); got != opbus.Observer(a) {
		t.Errorf("observerOf of one member: %T, want the member itself", got)
	}
}

// TestBusOptionsObserver: BusOptions gives the bus an Observer that reaches
// the user's, the Metrics and the adapter's failure Events; a failure
// queues an Event, a success or a shutdown's cancellation does not.
func TestBusOptionsObserver(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := fakeSource(t, widgets, "Widget", StatusConditions)
	s.failures = newFailureEvents(s)
	s.opts.Metrics = m
	user := &countingObserver{}
	o := s.BusOptions(&opbus.Options{Observer: user}).Observer
	fan, ok := o.(observers)
	if !ok || len(fan) != 3 {
		t.Fatalf("Observer %T %v, want the user's, the metrics and the adapter's", o, o)
	}
	k := opbus.Key{Kind: "Widget.example.com", Namespace: "ns", Name: "w"}
	o.Handled(k, "h", 1, time.Millisecond, errors.New("boom"))
	o.Handled(k, "h", 2, time.Millisecond, nil)
	o.Handled(k, "h", 3, time.Millisecond, fmt.Errorf("stopping: %w", context.Canceled))
	if user.handled != 3 {
		t.Errorf("the user's Observer heard %d runs, want 3", user.handled)
	}
	if n := len(s.failures.queue); n != 1 {
		t.Errorf("%d failures queued for Events, want 1 (the failure, not the success or the cancellation)", n)
	}
	if o := s.BusOptions(&opbus.Options{Observer: m}).Observer.(observers); len(o) != 2 {
		t.Errorf("Metrics given as the bus's Observer too: %d members, want 2 (Metrics once)", len(o))
	}
}
