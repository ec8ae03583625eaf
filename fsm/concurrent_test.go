package fsm_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

// Many objects dispatched in parallel by Run each follow their own
// lifecycle: the transitions recorded for each are exactly the ones its own
// container states call for. Run with -race.
func TestConcurrentKeys(t *testing.T) {
	const keys = 64
	var mu sync.Mutex
	log := map[opbus.Key][]string{} // events that entered a state, per object
	record := func(_ context.Context, ev *opbus.Event, tr fsm.Transition) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		log[ev.Key] = append(log[ev.Key], tr.Event)
		return "", nil
	}
	spec := podSpec()
	for i := range spec.States {
		spec.States[i].Enter = record
	}
	m, err := fsm.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := podRules(m); err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(&opbus.Options{Workers: 8, ListKeys: map[string]string{"containerStatuses": "name"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(bus); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- bus.Run(ctx) }()

	// Object i crashes i%4 times; each crash is followed by a restart.
	want := map[opbus.Key][]string{}
	var feeders sync.WaitGroup
	for i := range keys {
		name := fmt.Sprintf("web-%02d", i)
		key := opbus.Key{Kind: "Pod", Namespace: "default", Name: name}
		states := []map[string]any{pod(name, "waiting", 0), pod(name, "running", 0)}
		want[key] = []string{"start"}
		for c := range i % 4 {
			states = append(states, pod(name, "terminated", c), pod(name, "running", c+1))
			want[key] = append(want[key], "crash", "recover")
		}
		feeders.Go(func() {
			for _, obj := range states {
				if err := bus.Observe(ctx, key, obj); err != nil {
					t.Error(err)
				}
			}
		})
	}
	feeders.Wait()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := bus.Wait(wctx); err != nil {
		t.Fatalf("waiting for the bus: %v", err)
	}
	if st := bus.Stats(); st.Coalesced != 0 || st.Failed != 0 {
		t.Fatalf("got %d coalesced states and %d failed handlers, want none: the test would prove nothing", st.Coalesced, st.Failed)
	}
	for key, events := range want {
		mu.Lock()
		got := slices.Clone(log[key])
		mu.Unlock()
		if !slices.Equal(got, events) {
			t.Errorf("%v: got transitions %v, want %v", key, got, events)
		}
		overall, _, err := bus.Status(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if overall != opbus.Active("running") {
			t.Errorf("%v: got overall status %v, want active: running", key, overall)
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
}
