package opbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/explain"
	"github.com/opbus/opbus/opbustest"
)

var (
	explainKey   = opbus.Key{Kind: "WebApp", Namespace: "shop", Name: "front"}
	explainStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func webapp(replicas int, paused bool) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "front", "uid": "u1"},
		"spec":     map[string]any{"replicas": replicas, "paused": paused},
	}
}

func explainBus(t *testing.T, opts *opbus.Options, handlers map[string]opbus.On, fn opbus.HandlerFunc) *opbus.Bus {
	t.Helper()
	b, err := opbus.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if on, ok := handlers[id]; ok {
			if err := b.Handle(id, fn, on); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b
}

func ok(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil }

// explainOf returns the explanation of handler id on explainKey, after
// checking that the report renders and encodes.
func explainOf(t *testing.T, b *opbus.Bus, id string) (*opbus.Explanation, opbus.HandlerExplanation) {
	t.Helper()
	r, err := b.Explain(context.Background(), explainKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	text := r.String()
	for _, h := range r.Handlers {
		if h.ID == id {
			if !strings.Contains(text, id+": "+string(h.Reason)+"\n") {
				t.Errorf("String() lacks %q:\n%s", id+": "+string(h.Reason), text)
			}
			return r, h
		}
	}
	t.Fatalf("no handler %q in %+v", id, r.Handlers)
	return nil, opbus.HandlerExplanation{}
}

func observeAndWait(t *testing.T, b *opbus.Bus, obj map[string]any) {
	t.Helper()
	ctx := context.Background()
	if err := b.Observe(ctx, explainKey, obj); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestExplainHandled: a handler whose current value was handled is
// "handled", its digests equal; the report says so in JSON and text.
func TestExplainHandled(t *testing.T) {
	b := explainBus(t, nil, map[string]opbus.On{"a": {Fields: []string{"spec.replicas"}}}, func(context.Context, *opbus.Event) (opbus.Status, error) {
		return opbus.Active("2 ready"), nil
	})
	if err := b.Dispatch(context.Background(), explainKey, webapp(2, false)); err != nil {
		t.Fatal(err)
	}
	r, h := explainOf(t, b, "a")
	if h.Reason != opbus.ReasonHandled || h.Current == "" || h.Current != h.Handled {
		t.Errorf("got %+v, want handled with equal digests", h)
	}
	if h.Slot == nil || h.Slot.Level != "active" || h.Slot.Message != "2 ready" {
		t.Errorf("slot: got %+v, want active \"2 ready\"", h.Slot)
	}
	if r.Status == nil || r.Status.Level != "active" || !r.Observed || r.Source != "bus" {
		t.Errorf("report: got %+v", r)
	}
	// A change outside its fields leaves it handled; one inside, after
	// a pass, is handled again with a new digest.
	if err := b.Dispatch(context.Background(), explainKey, webapp(3, false)); err != nil {
		t.Fatal(err)
	}
	if _, h2 := explainOf(t, b, "a"); h2.Reason != opbus.ReasonHandled || h2.Handled == h.Handled {
		t.Errorf("after a change: got %+v, want handled with a new digest", h2)
	}
}

// TestExplainFailed: a failed handler shows its attempt, next retry (on
// the bus's clock) and error text; a permanent failure shows no retry.
func TestExplainFailed(t *testing.T) {
	clock := opbustest.NewClock(explainStart)
	b := explainBus(t, &opbus.Options{Clock: clock, Backoff: opbus.Backoff{Initial: 10 * time.Second}},
		map[string]opbus.On{"a": {}, "b": {}},
		func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.Handler == "b" {
				return opbus.Status{}, opbus.Permanent(errors.New("spec.replicas: not a number of this world"))
			}
			return opbus.Status{}, errors.New("image registry unreachable")
		})
	observeAndWait(t, b, webapp(2, false))
	_, a := explainOf(t, b, "a")
	if a.Reason != opbus.ReasonFailed || a.Attempt != 1 || a.Error != "image registry unreachable" {
		t.Errorf("a: got %+v, want failed, attempt 1, its error", a)
	}
	if a.NextRetry == nil || !a.NextRetry.After(explainStart) || a.NextRetry.After(explainStart.Add(20*time.Second)) {
		t.Errorf("a: next retry %v, want within 20s after %v", a.NextRetry, explainStart)
	}
	_, p := explainOf(t, b, "b")
	if p.Reason != opbus.ReasonFailedPermanently || p.NextRetry != nil || !strings.Contains(p.Error, "not a number") {
		t.Errorf("b: got %+v, want failed for good without a retry", p)
	}
	// The retry runs when the clock passes it: attempt 2.
	clock.Advance(time.Minute)
	if err := b.Dispatch(context.Background(), explainKey, webapp(2, false)); err == nil {
		t.Fatal("the handlers succeeded: want them still failing")
	}
	if _, a := explainOf(t, b, "a"); a.Reason != opbus.ReasonFailed || a.Attempt != 2 {
		t.Errorf("a after a retry: got %+v, want attempt 2", a)
	}
}

// TestExplainScheduled: a handler that asked Again, and one with
// On.Every, are handled and wait for their next due time.
func TestExplainScheduled(t *testing.T) {
	clock := opbustest.NewClock(explainStart)
	b := explainBus(t, &opbus.Options{Clock: clock},
		map[string]opbus.On{"a": {}, "b": {Every: time.Hour}},
		func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.Handler == "a" {
				ev.Again(30 * time.Second)
				return opbus.Waiting("rollout in progress"), nil
			}
			return opbus.Status{}, nil
		})
	observeAndWait(t, b, webapp(2, false))
	_, a := explainOf(t, b, "a")
	if a.Reason != opbus.ReasonScheduled || !a.Again || a.NextDue == nil || !a.NextDue.Equal(explainStart.Add(30*time.Second)) {
		t.Errorf("a: got %+v, want scheduled by Again at +30s", a)
	}
	_, e := explainOf(t, b, "b")
	if e.Reason != opbus.ReasonScheduled || e.Again || e.NextDue == nil || !e.NextDue.Equal(explainStart.Add(time.Hour)) || e.Every != "1h0m0s" {
		t.Errorf("b: got %+v, want scheduled by Every at +1h", e)
	}
}

// TestExplainFilters: When, Options.Runs, kinds and types each explain
// a handler that did not run on a dispatched state.
func TestExplainFilters(t *testing.T) {
	b := explainBus(t, &opbus.Options{Runs: func(id string) bool { return id != "c" }},
		map[string]opbus.On{
			"a": {Fields: []string{"spec"}, When: func(ev *opbus.Event) bool { return ev.New["spec"].(map[string]any)["paused"] != true }},
			"b": {Kinds: []string{"Deployment"}},
			"c": {},
		}, ok)
	if err := b.Handle("gone", ok, opbus.On{Types: []opbus.EventType{opbus.Delete}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Handle("created", ok, opbus.On{Types: []opbus.EventType{opbus.Create}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.Dispatch(ctx, explainKey, webapp(2, false)); err != nil {
		t.Fatal(err)
	}
	if err := b.Dispatch(ctx, explainKey, webapp(3, true)); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]opbus.Reason{
		"a":       opbus.ReasonSkippedByWhen,
		"b":       opbus.ReasonFilteredByKind,
		"c":       opbus.ReasonNotRunHere,
		"gone":    opbus.ReasonFilteredByType,
		"created": opbus.ReasonFilteredByType,
	} {
		if _, h := explainOf(t, b, id); h.Reason != want {
			t.Errorf("%s: got %s (%s), want %s", id, h.Reason, h.Detail, want)
		}
	}
	// When holds again: the next pass runs it.
	if err := b.Dispatch(ctx, explainKey, webapp(3, false)); err != nil {
		t.Fatal(err)
	}
	if _, h := explainOf(t, b, "a"); h.Reason != opbus.ReasonHandled {
		t.Errorf("a once When holds: got %s, want handled", h.Reason)
	}
}

// TestExplainHeldAndCoalesced: states observed and not yet dispatched
// hold the handlers; past the backlog bound the report says they were
// coalesced.
func TestExplainHeldAndCoalesced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backlog int
		want    opbus.Reason
	}{
		{"held", 0, opbus.ReasonHeld},
		{"coalesced", 1, opbus.ReasonCoalesced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := explainBus(t, &opbus.Options{MaxBacklog: tc.backlog}, map[string]opbus.On{"a": {}}, ok)
			ctx := context.Background()
			for n := 1; n <= 3; n++ {
				if err := b.Observe(ctx, explainKey, webapp(n, false)); err != nil {
					t.Fatal(err)
				}
			}
			r, h := explainOf(t, b, "a")
			if h.Reason != tc.want || r.Queue.Queued == 0 {
				t.Errorf("got %s (%s), queue %+v; want %s", h.Reason, h.Detail, r.Queue, tc.want)
			}
			if err := b.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if _, h := explainOf(t, b, "a"); h.Reason != opbus.ReasonHandled {
				t.Errorf("after Wait: got %s, want handled", h.Reason)
			}
		})
	}
}

// TestExplainNeverRan: a handler added since the object's record was
// written has never run; once the object is observed again, it is held,
// then handled. Its collector, slot, incarnation and value show too.
func TestExplainNeverRan(t *testing.T) {
	store := opbus.NewMemoryStore()
	inc := func(obj map[string]any) string { return obj["metadata"].(map[string]any)["uid"].(string) }
	first := explainBus(t, &opbus.Options{Store: store, Incarnation: inc}, map[string]opbus.On{"a": {}}, func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
		return opbus.Status{}, ev.SetValue("phase", "deployed")
	})
	observeAndWait(t, first, webapp(2, false))

	next := explainBus(t, &opbus.Options{Store: store, Incarnation: inc}, map[string]opbus.On{"a": {}, "b": {}}, ok)
	if err := next.Collect("summary", func(context.Context, opbus.Key, map[string]any) opbus.Status { return opbus.Active("fine") }); err != nil {
		t.Fatal(err)
	}
	r, b := explainOf(t, next, "b")
	if b.Reason != opbus.ReasonNeverRan || r.Observed {
		t.Errorf("b: got %+v (observed %v), want never-ran", b, r.Observed)
	}
	if _, a := explainOf(t, next, "a"); a.Reason != opbus.ReasonRan || a.Handled == "" {
		t.Errorf("a: got %+v, want ran (current value unknown)", a)
	}
	if r.Incarnation != "u1" || r.Values["phase"] != "deployed" {
		t.Errorf("incarnation %q, values %v; want u1, phase=deployed", r.Incarnation, r.Values)
	}
	observeAndWait(t, next, webapp(2, false))
	r, c := explainOf(t, next, "summary")
	if c.Reason != opbus.ReasonCollector || c.Slot == nil || c.Slot.Message != "fine" {
		t.Errorf("summary: got %+v, want a collector with its slot", c)
	}
	if _, b := explainOf(t, next, "b"); b.Reason != opbus.ReasonHandled {
		t.Errorf("b after a pass: got %s, want handled", b.Reason)
	}
	if !strings.Contains(r.String(), "incarnation: u1\n") {
		t.Errorf("String() lacks the incarnation:\n%s", r)
	}
}

// TestExplainRelated: the objects related to the object are listed.
func TestExplainRelated(t *testing.T) {
	b := explainBus(t, nil, nil, ok)
	if err := b.Relate("Deployment", func(opbus.Key, map[string]any) []opbus.Key { return []opbus.Key{explainKey} }); err != nil {
		t.Fatal(err)
	}
	if err := b.Handle("a", ok, opbus.On{Fields: []string{"spec", "related.Deployment"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	child := opbus.Key{Kind: "Deployment", Namespace: "shop", Name: "front"}
	if err := b.Observe(ctx, child, map[string]any{"status": map[string]any{"ready": 1}}); err != nil {
		t.Fatal(err)
	}
	observeAndWait(t, b, webapp(2, false))
	r, h := explainOf(t, b, "a")
	if len(r.Related) != 1 || r.Related[0].Key != child.String() {
		t.Errorf("related: got %+v, want %v", r.Related, child)
	}
	if h.Reason != opbus.ReasonRan || len(r.Notes) == 0 {
		t.Errorf("a reads related objects: got %s, notes %v; want ran with a note", h.Reason, r.Notes)
	}
}

// TestExplainSummaryMatchesSlots: the overall status opbus explain folds
// from a stored record is the one Slots.Summary folds.
func TestExplainSummaryMatchesSlots(t *testing.T) {
	for _, slots := range []opbus.Slots{
		{},
		{"a": opbus.Active("")},
		{"b": opbus.Waiting("w").WithReason("Rolling"), "a": opbus.Active("up")},
		{"c": opbus.Blocked("c"), "a": opbus.Blocked("a").WithReason("NoConfig"), "b": opbus.ErrorStatus("").WithReason("Crash"), "d": opbus.ErrorStatus("d")},
		{"m": opbus.Maintenance(""), "n": opbus.Maintenance("").WithReason("Upgrade")},
	} {
		data, err := json.Marshal(slots)
		if err != nil {
			t.Fatal(err)
		}
		var stored map[string]explain.Status
		if err := json.Unmarshal(data, &stored); err != nil {
			t.Fatal(err)
		}
		want := slots.Summary()
		word, _ := want.Level.MarshalText()
		if got := explain.Summary(stored); got != (explain.Status{Level: string(word), Message: want.Message, Reason: want.Reason}) && len(slots) > 0 {
			t.Errorf("%v: got %+v, want %+v", slots, got, want)
		}
	}
}

// TestExplainWhileRunning calls Explain while Run handles a stream of
// states of the object (run with -race): every report has its handler
// and a reason, and once Wait returns the handler is handled.
func TestExplainWhileRunning(t *testing.T) {
	b := explainBus(t, &opbus.Options{MaxBacklog: 4}, map[string]opbus.On{"a": {Fields: []string{"spec.replicas"}}}, ok)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	observed := make(chan error, 1)
	go func() {
		for n := range 200 {
			if err := b.Observe(ctx, explainKey, webapp(n, false)); err != nil {
				observed <- err
				return
			}
		}
		observed <- nil
	}()
	for range 50 {
		r, err := b.Explain(ctx, explainKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Handlers) != 1 || r.Handlers[0].Reason == "" {
			t.Fatalf("report while running: %+v", r.Handlers)
		}
	}
	if err := <-observed; err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Wait returns once no key is busy, and a key stays busy until its
	// record is written (rule 43): the record is the last pass's.
	if _, h := explainOf(t, b, "a"); h.Reason != opbus.ReasonHandled {
		t.Errorf("once the bus is idle: got %s (%s), want handled", h.Reason, h.Detail)
	}
}
