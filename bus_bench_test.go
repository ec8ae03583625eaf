package opbus

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"testing"
)

// podFields are 20 subscriptions on different parts of a Pod, as twenty
// handlers of a real operator might have.
var podFields = []string{
	"spec.containers", "status.containerStatuses", "status.phase", "metadata.labels",
	"metadata.annotations", "spec.volumes", "status.conditions", "spec.nodeName",
	"status.podIP", "spec.tolerations", "metadata.ownerReferences",
	"spec.containers[name=app].image", "status.containerStatuses[*].ready", "status.hostIP",
	"spec.serviceAccountName", "spec.restartPolicy", "metadata.labels.app", "status.qosClass",
	"spec.dnsPolicy", "status.startTime",
}

var k8sOptions = Options{
	ListKeys: map[string]string{"containers": "name", "containerStatuses": "name", "conditions": "type",
		"volumes": "name", "env": "name", "ports": "containerPort", "volumeMounts": "mountPath"},
}

// BenchmarkDispatch measures the bus's work per observed update of the Pod
// fixture (one container going running ↔ terminated) with 20 handlers on
// different fields, handler bodies empty, in-memory store; next to it, one
// Compare of the same pair with the same settings, the target's unit.
func BenchmarkDispatch(b *testing.B) {
	old := loadFixture(b, "pod-old.json").(map[string]any)
	new := loadFixture(b, "pod-new.json").(map[string]any)
	opts := k8sOptions
	bus := newBus(b, &opts)
	for i, f := range podFields {
		must(b, bus.Handle(fmt.Sprint("h", i), func(context.Context, *Event) (Status, error) {
			return Status{}, nil
		}, On{Fields: []string{f}}))
	}
	ctx := context.Background()
	key := Key{Kind: "Pod", Namespace: "default", Name: "web"}
	must(b, bus.Dispatch(ctx, key, old))
	b.Run("dispatch", func(b *testing.B) {
		b.ReportAllocs()
		objs := [2]map[string]any{new, old}
		i := 0
		for b.Loop() {
			if err := bus.Dispatch(ctx, key, objs[i%2]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("compare", func(b *testing.B) {
		b.ReportAllocs()
		cmp := bus.comparer()
		for b.Loop() {
			cmp.Compare(old, new)
		}
	})
	b.Run("dispatch-typed", func(b *testing.B) {
		// The same updates with the labels a map[string]string, as a
		// caller that builds documents by hand gives them: the door
		// converts the labels and copies the two maps above them.
		b.ReportAllocs()
		objs := [2]map[string]any{typedLabels(new), typedLabels(old)}
		i := 0
		for b.Loop() {
			if err := bus.Dispatch(ctx, key, objs[i%2]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("dispatch-unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := bus.Dispatch(ctx, key, old); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// typedLabels returns obj with its metadata.labels as a map[string]string.
func typedLabels(obj map[string]any) map[string]any {
	md := maps.Clone(obj["metadata"].(map[string]any))
	labels := map[string]string{}
	for k, v := range md["labels"].(map[string]any) {
		labels[k] = v.(string)
	}
	md["labels"] = labels
	out := maps.Clone(obj)
	out["metadata"] = md
	return out
}

// BenchmarkMemoryPerKey measures the bookkeeping the bus keeps per object
// (in-memory store included) at 100,000 keys with 10 subscriptions, beyond
// the last-seen objects themselves, which the benchmark also holds.
func BenchmarkMemoryPerKey(b *testing.B) {
	const keys = 100_000
	for b.Loop() {
		objs := make([]map[string]any, keys)
		for i := range objs {
			objs[i] = map[string]any{"spec": map[string]any{"replicas": i % 7, "image": "app:1"},
				"status": map[string]any{"ready": i%2 == 0}, "metadata": map[string]any{"name": fmt.Sprint("o", i)}}
		}
		bus := newBus(b, nil)
		for i := range 10 {
			field := []string{"spec.replicas", "spec.image", "status.ready", "metadata.name", "spec"}[i%5]
			must(b, bus.Handle(fmt.Sprint("handler-", i), func(context.Context, *Event) (Status, error) {
				return Status{}, nil
			}, On{Fields: []string{field}}))
		}
		before := heapInUse()
		ctx := context.Background()
		for i, o := range objs {
			must(b, bus.Dispatch(ctx, Key{Kind: "Widget", Namespace: "default", Name: fmt.Sprint("o", i)}, o))
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/keys, "B/key")
		runtime.KeepAlive(bus)
		runtime.KeepAlive(objs)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
