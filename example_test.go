package opbus_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/opbus/opbus"
)

func ExampleParsePath() {
	p, err := opbus.ParsePath(`status.containerStatuses[name=app].state`)
	if err != nil {
		panic(err)
	}
	fmt.Println(p, len(p))

	_, err = opbus.ParsePath("spec..containers")
	var pe *opbus.PathError
	fmt.Println(errors.As(err, &pe), pe.Offset)
	fmt.Println(err)
	// Output:
	// status.containerStatuses[name=app].state 4
	// true 5
	// opbus: field path spec..containers: at offset 5: empty key between dots: expected a key
}

func ExampleCompare() {
	old := map[string]any{"status": map[string]any{"phase": "Running", "restarts": 1}}
	new := map[string]any{"status": map[string]any{"phase": "Failed", "restarts": int64(1), "reason": "Error"}}
	for _, c := range opbus.Compare(old, new) {
		fmt.Println(c)
	}
	// Output:
	// change status.phase: "Running" → "Failed"
	// add status.reason = "Error"
}

func ExampleComparer() {
	cmp, err := opbus.NewComparer(&opbus.CompareOptions{
		Ignore:   []string{"metadata.resourceVersion"},
		ListKeys: map[string]string{"containerStatuses": "name"},
	})
	if err != nil {
		panic(err)
	}
	old := map[string]any{
		"metadata": map[string]any{"resourceVersion": "41"},
		"status": map[string]any{"containerStatuses": []any{
			map[string]any{"name": "sidecar", "ready": true},
			map[string]any{"name": "app", "ready": true},
		}},
	}
	new := map[string]any{
		"metadata": map[string]any{"resourceVersion": "42"},
		"status": map[string]any{"containerStatuses": []any{
			map[string]any{"name": "app", "ready": false},
			map[string]any{"name": "sidecar", "ready": true},
		}},
	}
	d := cmp.Compare(old, new)
	fmt.Println(d)
	fmt.Println(d.Under(opbus.MustParsePath("status.containerStatuses")))
	// Output:
	// change status.containerStatuses[name=app].ready: true → false
	// change [name=app].ready: true → false
}

func ExampleSlots_Summary() {
	slots := opbus.Slots{}
	slots.Set("config", opbus.Blocked("config item 'kind' must be set"))
	slots.Set("relation", opbus.Blocked("waiting for istio-pilot relation"))
	fmt.Println(slots.Summary())

	slots.Set("config", opbus.Active("")) // fixing one problem hides no other
	fmt.Println(slots.Summary())
	// Output:
	// blocked: config item 'kind' must be set; waiting for istio-pilot relation
	// blocked: waiting for istio-pilot relation
}

// ExampleBus shows the main loop: register handlers, run the bus, observe
// states. A status-only change fires the handler subscribed to it.
func ExampleBus() {
	ctx := context.Background()
	bus, err := opbus.New(&opbus.Options{ListKeys: map[string]string{"containerStatuses": "name"}})
	if err != nil {
		panic(err)
	}
	err = bus.Handle("crash-watch", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		fmt.Println(ev.Type, ev.Key, "changed:")
		fmt.Println(ev.Changes)
		return opbus.Blocked("container app terminated"), nil
	}, opbus.On{Types: []opbus.EventType{opbus.Update}, Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}})
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- bus.Run(runCtx) }()

	key := opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}
	pod := func(state string) map[string]any {
		return map[string]any{"status": map[string]any{"containerStatuses": []any{
			map[string]any{"name": "app", "state": map[string]any{state: map[string]any{}}}}}}
	}
	_ = bus.Observe(ctx, key, pod("running"))
	_ = bus.Observe(ctx, key, pod("terminated"))
	_ = bus.Wait(ctx)
	st, _, _ := bus.Status(ctx, key)
	fmt.Println("overall:", st)
	stop()
	fmt.Println(<-done)
	// Output:
	// update Pod default/web changed:
	// remove status.containerStatuses[name=app].state.running (was {})
	// add status.containerStatuses[name=app].state.terminated = {}
	// overall: blocked: container app terminated
	// <nil>
}

// ExampleBus_Dispatch shows one-shot use, as a Juju hook process does: each
// handler keeps its own slot, and fixing one problem hides no other.
func ExampleBus_Dispatch() {
	ctx := context.Background()
	store := opbus.NewMemoryStore() // a FileStore or Juju's state in real use
	key := opbus.Key{Kind: "unit", Name: "gateway/0"}
	for _, doc := range []map[string]any{
		{"kind": "", "relation": false},
		{"kind": "ingress", "relation": false},
	} {
		bus, _ := opbus.New(&opbus.Options{Store: store}) // a new process each time
		_ = bus.Handle("config", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.New["kind"] == "" {
				return opbus.Blocked("set kind"), nil
			}
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"kind"}})
		_ = bus.Handle("relation", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			if ev.New["relation"] == false {
				return opbus.Blocked("add the relation"), nil
			}
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"relation"}})
		if err := bus.Dispatch(ctx, key, doc); err != nil {
			panic(err)
		}
		st, _, _ := bus.Status(ctx, key)
		fmt.Println(st)
	}
	// Output:
	// blocked: set kind; add the relation
	// blocked: add the relation
}
