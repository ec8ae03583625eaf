package fsm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/opbus/opbus"
)

// Objects share looplab machines, so each Fire must start from its own
// object's record, whatever state the lent machine was left in, and a
// guard must see the event of the Fire it runs for. Random events for
// objects in random order, each checked against a model of the object's
// state: every step's From, every refusal of an event the state does not
// allow, and the slot each record ends with.
func TestRunnersFollowRecords(t *testing.T) {
	var fired *opbus.Event
	guard := func(_ context.Context, ev *opbus.Event, _ Transition) error {
		if ev != fired {
			return fmt.Errorf("guard given the event of %v during a Fire for %v", ev.Key, fired.Key)
		}
		return nil
	}
	for name, g := range map[string]Guard{"plain": nil, "guarded": guard} {
		t.Run(name, func(t *testing.T) {
			m, err := New(benchSpec(g))
			if err != nil {
				t.Fatal(err)
			}
			const objects = 7
			evs := make([]*opbus.Event, objects)
			recs := make([]*memRecord, objects)
			model := make([]string, objects)
			for i := range evs {
				evs[i] = &opbus.Event{Key: opbus.Key{Kind: "Pod", Name: fmt.Sprint("p", i)}}
				recs[i] = &memRecord{values: map[string]string{}, slots: opbus.Slots{}}
				model[i] = "a"
			}
			r := rand.New(rand.NewPCG(3, 4))
			for step := range 5000 {
				o, event := r.IntN(objects), toggle[r.IntN(2)]
				fired = evs[o]
				res, err := m.fire(context.Background(), evs[o], recs[o], event)
				want := map[string]string{"a": "go", "b": "back"}[model[o]]
				if event != want {
					if !errors.Is(err, ErrNotAllowed) {
						t.Fatalf("step %d: %q for p%d in %q: got %v, want ErrNotAllowed", step, event, o, model[o], err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %q for p%d in %q: %v", step, event, o, model[o], err)
				}
				if res.From != model[o] {
					t.Fatalf("step %d: %q for p%d started from %q, its record holds %q", step, event, o, res.From, model[o])
				}
				model[o] = res.To
			}
			for o, rec := range recs {
				st := m.states[model[o]]
				if got := rec.values[m.value]; got != model[o] {
					t.Errorf("p%d: record holds %q, want %q", o, got, model[o])
				}
				if got := rec.slots[m.spec.Name]; got != st.Status {
					t.Errorf("p%d: slot holds %v, want %v", o, got, st.Status)
				}
			}
		})
	}
}

// Many goroutines fire for their own objects at once, sharing the lent
// looplab machines. Run with -race.
func TestRunnersConcurrent(t *testing.T) {
	m, err := New(benchSpec(func(_ context.Context, ev *opbus.Event, tr Transition) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for o := range 20 {
				ev := &opbus.Event{Key: opbus.Key{Kind: "Pod", Name: fmt.Sprint("g", g, "-", o)}}
				rec := &memRecord{values: map[string]string{}, slots: opbus.Slots{}}
				for i := range 50 {
					res, err := m.fire(context.Background(), ev, rec, toggle[i&1])
					if err != nil {
						t.Errorf("%v: fire %d: %v", ev.Key, i, err)
						return
					}
					if want := [2]string{"b", "a"}[i&1]; res.To != want {
						t.Errorf("%v: fire %d went to %q, want %q", ev.Key, i, res.To, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// A guard or an Enter action that panics ends its Fire with the panic (the
// bus recovers it as the handler's), and leaves neither the object nor the
// lent looplab machine stuck: the object fires again from the state in its
// record, and the machine serves the next object. A guard's panic leaves
// the state as it was; an Enter's comes after the transition was recorded.
func TestPanicInGuardOrEnter(t *testing.T) {
	var panicGuard, panicEnter bool
	spec := benchSpec(func(context.Context, *opbus.Event, Transition) error {
		if panicGuard {
			panic("guard")
		}
		return nil
	})
	spec.States[1].Enter = func(context.Context, *opbus.Event, Transition) (string, error) {
		if panicEnter {
			panic("enter")
		}
		return "", nil
	}
	m, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	fire := func(ev *opbus.Event, rec *memRecord, event string) (res Result, recovered any, err error) {
		defer func() { recovered = recover() }()
		res, err = m.fire(context.Background(), ev, rec, event)
		return res, nil, err
	}
	newObject := func(name string) (*opbus.Event, *memRecord) {
		return &opbus.Event{Key: opbus.Key{Kind: "Pod", Name: name}}, &memRecord{values: map[string]string{}, slots: opbus.Slots{}}
	}
	ev, rec := newObject("web")

	panicGuard = true
	if _, p, _ := fire(ev, rec, "go"); p != "guard" {
		t.Fatalf("guard's panic: recovered %v, want %q", p, "guard")
	}
	panicGuard = false
	if got := rec.values[m.value]; got != "" {
		t.Fatalf("after the guard's panic the record holds state %q, want none", got)
	}
	panicEnter = true
	if _, p, _ := fire(ev, rec, "go"); p != "enter" {
		t.Fatalf("Enter's panic: recovered %v, want %q (the object must not be left in a transition)", p, "enter")
	}
	panicEnter = false
	if got := rec.values[m.value]; got != "b" {
		t.Fatalf("after Enter's panic the record holds state %q, want %q", got, "b")
	}
	res, p, err := fire(ev, rec, "back")
	if err != nil || p != nil || res.From != "b" || res.To != "a" {
		t.Fatalf("back after the panics: %+v, %v, panic %v; want b → a", res, err, p)
	}
	other, otherRec := newObject("db")
	res, p, err = fire(other, otherRec, "go")
	if err != nil || p != nil || res.From != "a" || res.To != "b" {
		t.Fatalf("another object after the panics: %+v, %v, panic %v; want a → b", res, err, p)
	}
}
