package opbus_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/opbustest"
)

func ExampleBus_Explain() {
	ctx := context.Background()
	clock := opbustest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	bus, _ := opbus.New(&opbus.Options{Clock: clock, Backoff: opbus.Backoff{Initial: 10 * time.Second, Jitter: -1}})
	_ = bus.Handle("deploy", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		return opbus.Status{}, errors.New("image registry unreachable")
	}, opbus.On{Fields: []string{"spec.image"}})
	_ = bus.Handle("scale", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		return opbus.Active("3 replicas"), nil
	}, opbus.On{Fields: []string{"spec.replicas"}})
	_ = bus.Handle("backup", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		return opbus.Status{}, nil
	}, opbus.On{Fields: []string{"spec"}, When: func(ev *opbus.Event) bool { return ev.New["spec"].(map[string]any)["backup"] == true }})

	key := opbus.Key{Kind: "WebApp", Namespace: "shop", Name: "front"}
	obj := map[string]any{"spec": map[string]any{"image": "shop:2", "replicas": 3, "backup": false}}
	_ = bus.Dispatch(ctx, key, obj)

	why, err := bus.Explain(ctx, key)
	if err != nil {
		panic(err)
	}
	fmt.Print(why)
	// Output:
	// WebApp shop/front (from the bus, at 2026-03-01T12:00:00Z)
	// status: error "image registry unreachable"
	// deploy: failed
	//   it failed (attempt 1); next retry at 2026-03-01T12:00:10Z (in 10s)
	//   error: image registry unreachable
	//   slot: error "image registry unreachable"
	// scale: handled
	//   the current value at its fields is the one it last handled
	//   slot: active "3 replicas"
	// backup: skipped-by-when
	//   it has handled no value of this incarnation, and its On.When returned false for the current one: it runs once When holds
}
