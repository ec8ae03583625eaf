package opbus

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTimers measures 10,000 objects with a handler due every second
// on a running bus, in real time, over a ten-second window after the
// schedules started: the process's CPU time (user and system, the whole
// process) per due run, and the lateness of the due runs (handler start −
// due time) at the median and p99. It runs once whatever b.N; use
// -benchtime 1x.
func BenchmarkTimers(b *testing.B) {
	const keys, window = 10_000, 10 * time.Second
	for b.Loop() {
		bus := newBus(b, nil)
		var mu sync.Mutex
		anchor := make([]time.Time, keys)
		var late []time.Duration
		var runs int
		var measuring bool
		must(b, bus.Handle("tick", func(_ context.Context, ev *Event) (Status, error) {
			now := time.Now()
			var i int
			fmt.Sscan(ev.Key.Name[1:], &i)
			mu.Lock()
			defer mu.Unlock()
			if !ev.Due {
				anchor[i] = time.UnixMilli(now.UnixMilli()) // as the schedule stores it
				return Active(""), nil
			}
			if measuring {
				runs++
				late = append(late, now.Sub(anchor[i])%time.Second)
			}
			return Active(""), nil
		}, On{Fields: []string{"spec"}, Every: time.Second}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- bus.Run(ctx) }()
		for i := range keys {
			must(b, bus.Observe(ctx, Key{Kind: "Widget", Namespace: "default", Name: fmt.Sprint("o", i)}, map[string]any{"spec": map[string]any{"n": i}}))
		}
		must(b, bus.Wait(ctx))
		time.Sleep(1500 * time.Millisecond) // the first due runs
		mu.Lock()
		measuring = true
		mu.Unlock()
		cpu0 := cpuTime()
		time.Sleep(window)
		cpu := cpuTime() - cpu0
		mu.Lock()
		measuring = false
		n := runs
		slices.Sort(late)
		p50, p99 := late[len(late)/2], late[len(late)*99/100]
		mu.Unlock()
		cancel()
		must(b, <-done)
		b.ReportMetric(float64(n)/window.Seconds(), "runs/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/run")
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-late-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-late-ms")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTimerMemoryPerKey measures the bookkeeping per object of a
// running bus at 10,000 objects with one handler, without a timer and
// with one (On.Every: an hour, so that none fires), in one run: the
// difference is what a timer costs per object.
func BenchmarkTimerMemoryPerKey(b *testing.B) {
	const keys = 10_000
	for _, every := range []time.Duration{0, time.Hour} {
		b.Run(fmt.Sprint("every=", every), func(b *testing.B) {
			for b.Loop() {
				objs := make([]map[string]any, keys)
				for i := range objs {
					objs[i] = map[string]any{"spec": map[string]any{"replicas": i % 7, "image": "app:1"}, "metadata": map[string]any{"name": fmt.Sprint("o", i)}}
				}
				bus := newBus(b, nil)
				must(b, bus.Handle("h", func(context.Context, *Event) (Status, error) {
					return Active(""), nil
				}, On{Fields: []string{"spec"}, Every: every}))
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- bus.Run(ctx) }()
				before := heapInUse()
				for i, o := range objs {
					must(b, bus.Observe(ctx, Key{Kind: "Widget", Namespace: "default", Name: fmt.Sprint("o", i)}, o))
				}
				must(b, bus.Wait(ctx))
				after := heapInUse()
				b.ReportMetric(float64(after-before)/keys, "B/key")
				cancel()
				must(b, <-done)
				runtime.KeepAlive(objs)
			}
		})
	}
}
