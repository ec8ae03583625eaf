package opbus_test

import (
	"context"
	"encoding/json"
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
			kind, err := opbus.Get[string](ev.New, "kind")
			if err != nil {
				return opbus.Status{}, err
			}
			if kind == "" {
				return opbus.Blocked("set kind"), nil
			}
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"kind"}})
		_ = bus.Handle("relation", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			related, err := opbus.Get[bool](ev.New, "relation")
			if err != nil {
				return opbus.Status{}, err
			}
			if !related {
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

// ExampleGet reads fields of a document as encoding/json and Juju's
// config-get decode it, where every number is a float64: a whole number
// reads as an int, an absent field is told apart with ErrAbsent, and a
// value of another type is an error naming the path and both types.
func ExampleGet() {
	var doc map[string]any
	_ = json.Unmarshal([]byte(`{
		"spec": {"version": "1.2", "replicas": 3, "ratio": 0.5,
			"containers": [{"name": "app", "image": "app:1"}]},
		"metadata": {"labels": {"app": "web"}}
	}`), &doc)

	version, err := opbus.Get[string](doc, "spec.version")
	fmt.Println(version, err)
	replicas, err := opbus.Get[int](doc, "spec.replicas")
	fmt.Println(replicas, err)
	image, err := opbus.Get[string](doc, "spec.containers[name=app].image")
	fmt.Println(image, err)
	labels, err := opbus.Get[map[string]string](doc, "metadata.labels")
	fmt.Println(labels, err)

	_, err = opbus.Get[int](doc, "spec.paused")
	fmt.Println(errors.Is(err, opbus.ErrAbsent), err)
	_, err = opbus.Get[int](doc, "spec.ratio")
	fmt.Println(err)
	// Output:
	// 1.2 <nil>
	// 3 <nil>
	// app:1 <nil>
	// map[app:web] <nil>
	// true opbus: field spec.paused is absent: spec has no key "paused"
	// opbus: value at spec.ratio: got float64 0.5, want int: not a whole number
}

// ExampleDecode decodes the part of a document a handler reads into a
// struct, through its JSON form: fields the document lacks keep the
// defaults set before.
func ExampleDecode() {
	type container struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	}
	type spec struct {
		Replicas   int         `json:"replicas"`
		Containers []container `json:"containers"`
	}
	doc := map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "image": "app:1"}},
	}}
	s := spec{Replicas: 1}
	if err := opbus.Decode(doc["spec"], &s); err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", s)

	bad := map[string]any{"replicas": "two"}
	fmt.Println(opbus.Decode(bad, &s))
	// Output:
	// {Replicas:1 Containers:[{Name:app Image:app:1}]}
	// opbus: value at replicas: got string, want int
}

// ExampleDocument observes a Go struct, here a typed spec, through its
// JSON form. The door converts plain values such as a map[string]string by
// itself, but a struct's JSON form follows its tags, so it is an error
// there.
func ExampleDocument() {
	type webApp struct {
		Name     string            `json:"name"`
		Replicas int32             `json:"replicas"`
		Labels   map[string]string `json:"labels,omitempty"`
	}
	ctx := context.Background()
	key := opbus.Key{Kind: "WebApp", Namespace: "default", Name: "web"}
	bus, _ := opbus.New(nil)
	_ = bus.Handle("show", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		fmt.Printf("%T %v\n", ev.New["spec"], ev.New["spec"])
		return opbus.Status{}, nil
	}, opbus.On{})

	app := webApp{Name: "web", Replicas: 2, Labels: map[string]string{"tier": "front"}}
	err := bus.Dispatch(ctx, key, map[string]any{"spec": app})
	fmt.Println(err)

	spec, err := opbus.Document(app)
	if err != nil {
		panic(err)
	}
	fmt.Println(bus.Dispatch(ctx, key, map[string]any{"spec": spec}))
	// Output:
	// opbus: state of WebApp default/web: value at spec: unsupported type opbus_test.webApp: a struct's JSON form follows its field tags: convert it with opbus.Document
	// map[string]interface {} map[labels:map[tier:front] name:web replicas:2]
	// <nil>
}

// ExampleBus_Collect shows when to compute a status instead of storing
// it: whether the backup service is reachable lies outside what any
// handler reads, so a status a handler returned about it would go stale.
// A collector is evaluated at every commit of the object instead, and its
// slot joins the handlers' in the overall status.
func ExampleBus_Collect() {
	ctx := context.Background()
	bus, err := opbus.New(nil)
	if err != nil {
		panic(err)
	}
	backupsReachable := false // what a probe of the outside service found
	err = bus.Collect("backups", func(ctx context.Context, key opbus.Key, obj map[string]any) opbus.Status {
		if !backupsReachable {
			return opbus.Waiting("backup service unreachable")
		}
		return opbus.Status{} // nothing to say: no slot
	})
	if err != nil {
		panic(err)
	}
	err = bus.Handle("config", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		return opbus.Active(""), nil
	}, opbus.On{Fields: []string{"spec"}})
	if err != nil {
		panic(err)
	}
	key := opbus.Key{Kind: "Database", Namespace: "default", Name: "db"}
	_ = bus.Dispatch(ctx, key, map[string]any{"spec": map[string]any{"size": 1}})
	st, _, _ := bus.Status(ctx, key)
	fmt.Println(st)

	backupsReachable = true
	_ = bus.Dispatch(ctx, key, map[string]any{"spec": map[string]any{"size": 2}})
	st, _, _ = bus.Status(ctx, key)
	fmt.Println(st)
	// Output:
	// waiting: backup service unreachable
	// active
}
