package opbus

import (
	"context"
	"testing"
)

// BenchmarkWriteBeside measures a pass under Run whose write goes beside
// the next pass (rule 22c), as every write does with pipeAlways: an
// Observe of a new image and the Settle that waits for its write, which
// the write's own goroutine makes before it claims the parked key and
// lets it go.
func BenchmarkWriteBeside(b *testing.B) {
	bus := newBus(b, &Options{Workers: 1})
	bus.lanes.pipeAlways = true
	must(b, bus.Handle("h", func(_ context.Context, ev *Event) (Status, error) {
		return Status{Level: LevelActive}, nil
	}, On{Fields: []string{"spec.image"}}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bus.Run(ctx) }()
	images := [2]string{"v1", "v2"}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		must(b, bus.Observe(ctx, keyNamed("a"), doc("a", images[i%2])))
		must(b, bus.Settle(ctx))
		i++
	}
	b.StopTimer()
	cancel()
	must(b, <-done)
}
