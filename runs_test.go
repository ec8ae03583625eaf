package opbus_test

import (
	"context"
	"testing"

	"github.com/opbus/opbus"
)

// TestOptionsRuns: a handler Options.Runs passes over does not run and
// keeps its record as it was, so that a later bus without the restriction
// runs it on the same value; the handlers it selects run as usual.
func TestOptionsRuns(t *testing.T) {
	ctx := context.Background()
	store := opbus.NewMemoryStore()
	ran := map[string]int{}
	newBus := func(runs func(string) bool) *opbus.Bus {
		b, err := opbus.New(&opbus.Options{Store: store, Runs: runs})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"config", "action"} {
			err := b.Handle(id, func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				ran[ev.Handler]++
				return opbus.Active(""), nil
			}, opbus.On{Fields: []string{id}})
			if err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	key := opbus.Key{Kind: "unit", Name: "web/0"}
	doc := map[string]any{"config": "a", "action": "x"}
	only := newBus(func(id string) bool { return id == "action" })
	if err := only.Dispatch(ctx, key, doc); err != nil {
		t.Fatal(err)
	}
	if ran["config"] != 0 || ran["action"] != 1 {
		t.Fatalf("with Runs selecting action: runs %v, want action once and config never", ran)
	}
	if err := newBus(nil).Dispatch(ctx, key, doc); err != nil {
		t.Fatal(err)
	}
	if ran["config"] != 1 || ran["action"] != 1 {
		t.Fatalf("without Runs on the same value: runs %v, want config once (passed over before) and action not again", ran)
	}
}
