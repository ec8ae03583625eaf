package fsm

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	lfsm "github.com/looplab/fsm"

	"github.com/opbus/opbus"
)

// Each benchmark makes one transition per iteration, alternating "go"
// (a → b) and "back" (b → a), so that every iteration changes state.
// Compare them as ratios within one run, in rounds of -count 1 so that the
// rows compared are measured seconds apart (as scripts/bench does):
//
//	for i in $(seq 6); do go test -run '^$' -bench . -benchmem -count 1 ./fsm/; done

var toggle = [2]string{"go", "back"}

func benchSpec(guard Guard) Spec {
	return Spec{
		Name:    "bench",
		Initial: "a",
		States:  []State{{Name: "a", Status: opbus.Waiting("at a")}, {Name: "b", Status: opbus.Active("at b")}},
		Triggers: []Trigger{
			{Name: "go", Src: []string{"a"}, Dst: "b", Guard: guard},
			{Name: "back", Src: []string{"b"}, Dst: "a", Guard: guard},
		},
	}
}

var benchEvents = lfsm.Events{
	{Name: "go", Src: []string{"a"}, Dst: "b"},
	{Name: "back", Src: []string{"b"}, Dst: "a"},
}

// memRecord keeps one object's values and slots in memory, as the record
// of a dispatch does, without the bus.
type memRecord struct {
	values map[string]string
	slots  opbus.Slots
}

func (r *memRecord) Value(name string) (string, bool) {
	v, ok := r.values[name]
	return v, ok
}

func (r *memRecord) SetValue(name, value string) error {
	r.values[name] = value
	return nil
}

func (r *memRecord) SetSlot(id string, s opbus.Status) error {
	r.slots.Set(id, s)
	return nil
}

var benchKey = opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}

func BenchmarkTransition(b *testing.B) {
	ctx := context.Background()
	allow := func(context.Context, *opbus.Event, Transition) error { return nil }

	// opbus: Machine.Fire's work for one object (restore from the record,
	// looplab's transition, record the state, set the slot), on an
	// in-memory record instead of a dispatch.
	opbusFire := func(guard Guard) func(b *testing.B) {
		return func(b *testing.B) {
			m, err := New(benchSpec(guard))
			if err != nil {
				b.Fatal(err)
			}
			ev := &opbus.Event{Key: benchKey}
			rec := &memRecord{values: map[string]string{}, slots: opbus.Slots{}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := m.fire(ctx, ev, rec, toggle[i&1]); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("impl=opbus", opbusFire(nil))
	b.Run("impl=opbus/guarded", opbusFire(allow))

	// opbus for many objects in turn, each with its own record, as a
	// busy operator fires: one transition per iteration, for the next of
	// 10,000 objects.
	b.Run("impl=opbus/objects=10000", func(b *testing.B) {
		m, err := New(benchSpec(nil))
		if err != nil {
			b.Fatal(err)
		}
		const objects = 10_000
		evs := make([]opbus.Event, objects)
		recs := make([]memRecord, objects)
		for i := range evs {
			evs[i].Key = opbus.Key{Kind: "Pod", Namespace: "default", Name: fmt.Sprint("pod-", i)}
			recs[i] = memRecord{values: map[string]string{}, slots: opbus.Slots{}}
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			o := i % objects
			if _, err := m.fire(ctx, &evs[o], &recs[o], toggle[(i/objects)&1]); err != nil {
				b.Fatal(err)
			}
		}
	})

	// opbus through the bus: a synchronous Dispatch of a changed object
	// whose handler fires, record saved to the memory store included.
	b.Run("impl=opbus/dispatch", func(b *testing.B) {
		bus, err := opbus.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		m, err := New(benchSpec(nil))
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Register(bus); err != nil {
			b.Fatal(err)
		}
		objs := [2]map[string]any{{"spec": map[string]any{"n": 0}}, {"spec": map[string]any{"n": 1}}}
		err = bus.Handle("toggle", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			state, err := m.State(ev)
			if err != nil {
				return opbus.Status{}, err
			}
			event := "go"
			if state == "b" {
				event = "back"
			}
			_, err = m.Fire(ctx, ev, event)
			return opbus.Status{}, err
		}, opbus.On{Fields: []string{"spec.n"}})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := bus.Dispatch(ctx, benchKey, objs[i&1]); err != nil {
				b.Fatal(err)
			}
		}
	})

	looplab := func(callbacks lfsm.Callbacks) func(b *testing.B) {
		return func(b *testing.B) {
			f := lfsm.NewFSM("a", benchEvents, callbacks)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := f.Event(ctx, toggle[i&1]); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("impl=looplab", looplab(nil))
	b.Run("impl=looplab/guarded", looplab(lfsm.Callbacks{"before_event": func(context.Context, *lfsm.Event) {}}))
}

// BenchmarkMemoryPerObject reports what the machine keeps for each object
// it has fired for (B/object), with 10,000 objects and the keys' strings
// made beforehand, as the objects' own would be; "triggers" is the size of
// the machine.
func BenchmarkMemoryPerObject(b *testing.B) {
	const objects = 10_000
	for _, n := range []int{2, 10} {
		b.Run(fmt.Sprintf("triggers=%d", n), func(b *testing.B) {
			spec := Spec{Name: "mem", Initial: "s0"}
			for i := range n {
				spec.States = append(spec.States, State{Name: fmt.Sprint("s", i), Status: opbus.Active(fmt.Sprint("at ", i))})
				spec.Triggers = append(spec.Triggers, Trigger{Name: fmt.Sprint("e", i), Src: []string{fmt.Sprint("s", i)}, Dst: fmt.Sprint("s", (i+1)%n)})
			}
			keys := make([]opbus.Key, objects)
			for i := range keys {
				keys[i] = opbus.Key{Kind: "Pod", Namespace: "default", Name: fmt.Sprint("pod-", i)}
			}
			ctx := context.Background()
			for b.Loop() {
				m, err := New(spec)
				if err != nil {
					b.Fatal(err)
				}
				before := heapAlloc()
				for _, key := range keys {
					rec := &memRecord{values: map[string]string{}, slots: opbus.Slots{}}
					if _, err := m.fire(ctx, &opbus.Event{Key: key}, rec, "e0"); err != nil {
						b.Fatal(err)
					}
				}
				after := heapAlloc()
				b.ReportMetric(float64(after-before)/objects, "B/object")
				runtime.KeepAlive(m)
			}
		})
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
