package opbus

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkRelated measures the bus's work when one of a WebApp's
// Deployments changes status.readyReplicas, with a handler on the WebApp
// subscribed to related.Deployment[*].status.readyReplicas (empty body,
// in-memory store): the Deployment's Dispatch queues the change on the
// WebApp, whose Dispatch (of its unchanged state) runs the handler. With
// 1,000 related Deployments the cost must stay within 2× of one.
func BenchmarkRelated(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprint("children=", n), func(b *testing.B) {
			bus := newBus(b, nil)
			must(b, bus.Relate("Deployment", ownersOf))
			must(b, bus.Handle("ready", func(context.Context, *Event) (Status, error) {
				return Status{}, nil
			}, On{Kinds: []string{"WebApp"}, Fields: []string{"related.Deployment[*].status.readyReplicas"}}))
			ctx := context.Background()
			for i := range n {
				must(b, bus.Dispatch(ctx, deployKey(fmt.Sprint("d", i)), deployment(fmt.Sprint("d", i), 1, "shop")))
			}
			app := webAppDoc("shop", 1)
			must(b, bus.Dispatch(ctx, appKey("shop"), app))
			docs := [2]map[string]any{deployment("d0", 2, "shop"), deployment("d0", 1, "shop")}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				must(b, bus.Dispatch(ctx, deployKey("d0"), docs[i%2]))
				must(b, bus.Dispatch(ctx, appKey("shop"), app))
				i++
			}
			if st := bus.Stats(); st.Ran < uint64(i) {
				b.Fatalf("the handler ran %d times in %d changes", st.Ran, i)
			}
		})
	}
}

// BenchmarkMemoryPerRelation measures what a relation costs: 10,000
// WebApps each with one Deployment, with and without the relation (and a
// handler reading the WebApp's spec, or its Deployment's readiness),
// bookkeeping of the bus and its in-memory store per pair, beyond the
// documents themselves, which the benchmark holds.
func BenchmarkMemoryPerRelation(b *testing.B) {
	const pairs = 10_000
	for _, related := range []bool{false, true} {
		b.Run(fmt.Sprint("related=", related), func(b *testing.B) {
			for b.Loop() {
				apps := make([]map[string]any, pairs)
				deps := make([]map[string]any, pairs)
				for i := range pairs {
					apps[i] = webAppDoc(fmt.Sprint("a", i), i%5)
					deps[i] = deployment(fmt.Sprint("d", i), i%3, fmt.Sprint("a", i))
				}
				bus := newBus(b, nil)
				field := "spec.replicas"
				if related {
					must(b, bus.Relate("Deployment", ownersOf))
					field = "related.Deployment[*].status.readyReplicas"
				}
				must(b, bus.Handle("ready", func(context.Context, *Event) (Status, error) {
					return Status{}, nil
				}, On{Kinds: []string{"WebApp"}, Fields: []string{field}}))
				before := heapInUse()
				ctx := context.Background()
				for i := range pairs {
					must(b, bus.Dispatch(ctx, deployKey(fmt.Sprint("d", i)), deps[i]))
					must(b, bus.Dispatch(ctx, appKey(fmt.Sprint("a", i)), apps[i]))
				}
				after := heapInUse()
				b.ReportMetric(float64(after-before)/pairs, "B/pair")
				runtime.KeepAlive(bus)
				runtime.KeepAlive(apps)
				runtime.KeepAlive(deps)
			}
		})
	}
}

// BenchmarkMemoryRelationAndTimer measures what one relation and one timer
// cost together, on a running bus: 10,000 WebApps each with one
// Deployment, a WebApp handler reading the WebApp's spec (plain) or its
// Deployment's readiness every hour (both, so that none fires), per
// WebApp beyond the documents themselves. The difference between the two
// is what the target bounds (1 KiB).
func BenchmarkMemoryRelationAndTimer(b *testing.B) {
	const pairs = 10_000
	for _, both := range []bool{false, true} {
		b.Run(fmt.Sprint("relation+timer=", both), func(b *testing.B) {
			for b.Loop() {
				apps := make([]map[string]any, pairs)
				deps := make([]map[string]any, pairs)
				for i := range pairs {
					apps[i] = webAppDoc(fmt.Sprint("a", i), i%5)
					deps[i] = deployment(fmt.Sprint("d", i), i%3, fmt.Sprint("a", i))
				}
				bus := newBus(b, nil)
				on := On{Kinds: []string{"WebApp"}, Fields: []string{"spec.replicas"}}
				if both {
					must(b, bus.Relate("Deployment", ownersOf))
					on = On{Kinds: []string{"WebApp"}, Fields: []string{"related.Deployment[*].status.readyReplicas"}, Every: time.Hour}
				}
				must(b, bus.Handle("ready", func(context.Context, *Event) (Status, error) {
					return Active(""), nil
				}, on))
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- bus.Run(ctx) }()
				before := heapInUse()
				for i := range pairs {
					must(b, bus.Observe(ctx, deployKey(fmt.Sprint("d", i)), deps[i]))
					must(b, bus.Observe(ctx, appKey(fmt.Sprint("a", i)), apps[i]))
				}
				must(b, bus.Wait(ctx))
				after := heapInUse()
				b.ReportMetric(float64(after-before)/pairs, "B/webapp")
				cancel()
				must(b, <-done)
				runtime.KeepAlive(apps)
				runtime.KeepAlive(deps)
			}
		})
	}
}
