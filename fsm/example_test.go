package fsm_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

// podSpec is the lifecycle of a Pod: pending until its containers run,
// failed when one terminates, running again when it restarts.
func podSpec() fsm.Spec {
	return fsm.Spec{
		Name:    "lifecycle",
		Initial: "pending",
		States: []fsm.State{
			{Name: "pending", Status: opbus.Waiting("waiting for containers")},
			{Name: "running", Status: opbus.Active("running")},
			{Name: "failed", Status: opbus.Blocked("container crashed")},
		},
		Triggers: []fsm.Trigger{
			{Name: "start", Src: []string{"pending"}, Dst: "running"},
			{Name: "crash", Src: []string{"running"}, Dst: "failed"},
			{Name: "recover", Src: []string{"failed"}, Dst: "running"},
		},
		Kinds: []string{"Pod"},
	}
}

const containerStatuses = "status.containerStatuses"

// podRules drives the lifecycle from the containers' states.
func podRules(m *fsm.Machine) error {
	for _, r := range []fsm.Rule{
		{ID: "started", Field: containerStatuses, When: allContainers("running"), Fire: "start"},
		{ID: "crashed", Field: containerStatuses, When: anyContainer("terminated"), Fire: "crash"},
		{ID: "recovered", Field: containerStatuses, When: allContainers("running"), Fire: "recover"},
	} {
		if err := m.AddRule(r); err != nil {
			return err
		}
	}
	return nil
}

// containerStatus is what the rules read of each element of
// status.containerStatuses.
type containerStatus struct {
	State map[string]any `json:"state"`
}

// containerStates returns the state ("waiting", "running", "terminated")
// of each container of the Pod: none while the Pod lists no containers, or
// lists them in a form that is not a Pod's (a When filter has no error to
// return).
func containerStates(ev *opbus.Event) []string {
	var states []string
	list, _ := opbus.Get[[]containerStatus](ev.Object(), containerStatuses)
	for _, cs := range list {
		for k := range cs.State {
			states = append(states, k)
		}
	}
	return states
}

func allContainers(state string) func(*opbus.Event) bool {
	return func(ev *opbus.Event) bool {
		states := containerStates(ev)
		for _, s := range states {
			if s != state {
				return false
			}
		}
		return len(states) > 0
	}
}

func anyContainer(state string) func(*opbus.Event) bool {
	return func(ev *opbus.Event) bool {
		for _, s := range containerStates(ev) {
			if s == state {
				return true
			}
		}
		return false
	}
}

// pod returns a Pod whose one container is in state, restarted restarts
// times.
func pod(name, state string, restarts int) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name},
		"status": map[string]any{"containerStatuses": []any{map[string]any{
			"name": "app", "restartCount": restarts, "state": map[string]any{state: map[string]any{}},
		}}},
	}
}

// The Pod lifecycle pending → running → failed → running, driven by
// changes of status.containerStatuses, with the overall status following
// it.
func Example() {
	ctx := context.Background()
	bus, err := opbus.New(&opbus.Options{ListKeys: map[string]string{"containerStatuses": "name"}})
	if err != nil {
		panic(err)
	}
	m, err := fsm.New(podSpec())
	if err != nil {
		panic(err)
	}
	if err := podRules(m); err != nil {
		panic(err)
	}
	if err := m.Register(bus); err != nil {
		panic(err)
	}
	// A handler registered after the machine sees the state its rules set
	// in the same dispatch.
	var state string
	err = bus.Handle("report", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		var err error
		state, err = m.State(ev)
		return opbus.Status{}, err
	}, opbus.On{Fields: []string{containerStatuses}})
	if err != nil {
		panic(err)
	}

	key := opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}
	for _, step := range []struct {
		container string
		restarts  int
	}{
		{"waiting", 0},
		{"running", 0},
		{"terminated", 0},
		{"running", 1},
	} {
		if err := bus.Dispatch(ctx, key, pod("web", step.container, step.restarts)); err != nil {
			panic(err)
		}
		overall, _, err := bus.Status(ctx, key)
		if err != nil {
			panic(err)
		}
		fmt.Printf("container %-10s → %-7s %v\n", step.container, state, overall)
	}
	// Output:
	// container waiting    → pending waiting: waiting for containers
	// container running    → running active: running
	// container terminated → failed  blocked: container crashed
	// container running    → running active: running
}

func ExampleMachine_Mermaid() {
	m, err := fsm.New(podSpec())
	if err != nil {
		panic(err)
	}
	fmt.Print(m.Mermaid())
	// Output:
	// stateDiagram-v2
	//     [*] --> pending
	//     pending : waiting
	//     running : active
	//     failed : blocked
	//     pending --> running : start
	//     running --> failed : crash
	//     failed --> running : recover
}

// Fire from a handler: an Enter action chains a second transition, an
// event the state does not allow and a guard's refusal are errors that
// name what went wrong, and the object's status follows its state.
func ExampleMachine_Fire() {
	m, err := fsm.New(fsm.Spec{
		Name:    "release",
		Initial: "draft",
		States: []fsm.State{
			{Name: "draft", Status: opbus.Waiting("draft")},
			{Name: "tagged", Enter: func(context.Context, *opbus.Event, fsm.Transition) (string, error) {
				return "publish", nil // tagged releases are published at once
			}},
			{Name: "published", Status: opbus.Active("published")},
		},
		Triggers: []fsm.Trigger{
			{Name: "tag", Src: []string{"draft"}, Dst: "tagged"},
			{Name: "publish", Src: []string{"tagged"}, Dst: "published"},
			{Name: "retract", Src: []string{"published"}, Dst: "draft",
				Guard: func(context.Context, *opbus.Event, fsm.Transition) error {
					return errors.New("published releases are immutable")
				}},
		},
	})
	if err != nil {
		panic(err)
	}
	bus, err := opbus.New(nil)
	if err != nil {
		panic(err)
	}
	if err := m.Register(bus); err != nil {
		panic(err)
	}
	err = bus.Handle("releaser", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		res, err := m.Fire(ctx, ev, "tag")
		fmt.Println(res.Steps(), res.Changed(), err)
		_, err = m.Fire(ctx, ev, "tag")
		fmt.Println(err)
		_, err = m.Fire(ctx, ev, "retract")
		fmt.Println(err)
		return opbus.Status{}, nil
	}, opbus.On{Fields: []string{"spec.version"}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	key := opbus.Key{Kind: "Release", Name: "v1"}
	if err := bus.Dispatch(ctx, key, map[string]any{"spec": map[string]any{"version": "1.0"}}); err != nil {
		panic(err)
	}
	overall, _, err := bus.Status(ctx, key)
	if err != nil {
		panic(err)
	}
	fmt.Println(overall)
	// Output:
	// [{tag draft tagged} {publish tagged published}] true <nil>
	// fsm: machine "release" on Release v1: event "tag" not allowed in state "published" (allowed: retract)
	// fsm: machine "release" on Release v1: event "retract" refused by its guard in state "published": published releases are immutable
	// active: published
}
