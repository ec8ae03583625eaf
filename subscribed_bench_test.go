package opbus

import (
	"context"
	"testing"
)

// BenchmarkSubscribedCompare compares the Pod fixture pair as a pass of
// root BenchmarkDispatch does: whole (Compare) and only within the
// subtrees its 20 handlers subscribe to (compareIn, one walk down their keys).
func BenchmarkSubscribedCompare(b *testing.B) {
	old := loadFixture(b, "pod-old.json").(map[string]any)
	new := loadFixture(b, "pod-new.json").(map[string]any)
	opts := k8sOptions
	bus := newBus(b, &opts)
	for i, f := range podFields {
		must(b, bus.Handle("h"+string(rune('a'+i)), func(context.Context, *Event) (Status, error) { return Status{}, nil }, On{Fields: []string{f}}))
	}
	cmp := bus.comparer()
	s := bus.subscribedOf("Pod")
	for _, pair := range []struct {
		name     string
		old, new map[string]any
	}{{"changed", old, new}, {"equal", old, loadFixture(b, "pod-old.json").(map[string]any)}} {
		b.Run(pair.name+"/whole", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cmp.Compare(pair.old, pair.new)
			}
		})
		b.Run(pair.name+"/subscribed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cmp.compareIn(pair.old, pair.new, s.tree)
			}
		})
	}
}
