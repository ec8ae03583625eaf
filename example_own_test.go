package opbus_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/opbus/opbus"
)

// Two replicas share a store and hand an object from one to the other:
// the first releases it, with the state it has not handled yet, and the
// second acquires it and handles that state from the record, once.
func ExampleBus_Release() {
	ctx := context.Background()
	store := opbus.NewMemoryStore()
	shop := opbus.Key{Kind: "WebApp", Namespace: "default", Name: "shop"}
	isShop := func(k opbus.Key) bool { return k == shop }
	replica := func(name string) *opbus.Bus {
		b, err := opbus.New(&opbus.Options{Store: store})
		if err != nil {
			panic(err)
		}
		err = b.Handle("scale", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			fmt.Printf("%s scales %s to %v\n", name, ev.Key.Name, ev.New["replicas"])
			return opbus.Active("scaled"), nil
		}, opbus.On{Fields: []string{"replicas"}})
		if err != nil {
			panic(err)
		}
		return b
	}
	a, b := replica("a"), replica("b")
	// b starts with no share: a owns everything.
	if err := b.Release(ctx, func(opbus.Key) bool { return true }); err != nil {
		panic(err)
	}

	if err := a.Dispatch(ctx, shop, map[string]any{"replicas": 1}); err != nil {
		panic(err)
	}
	// Observed, not handled yet (a runs no Run here) when a lets it go.
	if err := a.Observe(ctx, shop, map[string]any{"replicas": 2}); err != nil {
		panic(err)
	}
	if err := a.Release(ctx, isShop); err != nil {
		panic(err)
	}
	err := a.Observe(ctx, shop, map[string]any{"replicas": 3})
	fmt.Println(errors.Is(err, opbus.ErrNotOwned))

	if err := b.Acquire(ctx, isShop); err != nil {
		panic(err)
	}
	if err := b.Wait(ctx); err != nil { // handles the pending state
		panic(err)
	}
	// The same value observed again is handled already.
	if err := b.Dispatch(ctx, shop, map[string]any{"replicas": 2}); err != nil {
		panic(err)
	}
	st, _, _ := b.Status(ctx, shop)
	fmt.Println(st)
	// Output:
	// a scales shop to 1
	// true
	// b scales shop to 2
	// active: scaled
}
