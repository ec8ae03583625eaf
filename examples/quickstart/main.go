// Quickstart runs opbus on its embedded default — an in-memory store and a
// scripted source instead of a cluster or a Juju controller — and shows the
// cases opbus exists for:
//
//  1. A Pod whose container dies fires the handler subscribed to
//     status.containerStatuses (a status-only change, which kopf's update
//     handlers never see), while the library's own bookkeeping write fires
//     nothing.
//  2. Handler A and handler B both report Blocked; A recovers; the object
//     stays Blocked with B's message (in ops, A's Active would erase B's
//     Blocked), and a new Bus on the same file store — a new process, as
//     every Juju hook is — still sees it.
//  3. A WebApp handler subscribes to its Deployment's
//     status.readyReplicas through related objects: it runs when the
//     Deployment appears and when its readiness changes, and not for the
//     Deployment's other changes.
//  4. A timer and a poll: a handler that runs every period even when
//     nothing changes (kopf's @timer), and one that is not done yet and
//     says "look again later" without failing (what ops' event.defer()
//     is used for).
//  5. Why a handler did or did not run: Bus.Explain on a WebApp whose
//     handlers fail, succeed and are skipped. With -store DIR its record
//     stays in the FileStore DIR, for the opbus explain command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opbus/opbus"
)

func main() {
	ctx := context.Background()
	fs := flag.NewFlagSet("quickstart", flag.ExitOnError)
	store := fs.String("store", "", "keep section 5's FileStore in this directory, for opbus explain")
	if !testing.Testing() { // Example_main runs main with the test's own arguments
		_ = fs.Parse(os.Args[1:])
	}
	if err := podCrash(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := scopedSlots(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := relatedObjects(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := timers(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := whyNot(ctx, *store); err != nil {
		log.Fatal(err)
	}
}

// fired collects handler runs so that each step can print what fired.
type fired struct {
	mu   sync.Mutex
	runs []string
}

func (f *fired) add(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, s)
}

// first returns the first run collected, leaving it.
func (f *fired) first() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.runs) == 0 {
		return "nothing"
	}
	return f.runs[0]
}

func (f *fired) take() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := strings.Join(f.runs, "\n          ")
	f.runs = nil
	if s == "" {
		return "nothing"
	}
	return s
}

func podCrash(ctx context.Context) error {
	fmt.Println("== 1. a container dies: a status-only change")
	bus, err := opbus.New(&opbus.Options{
		Store:    opbus.NewMemoryStore(),
		Ignore:   []string{`metadata.annotations["opbus.dev/record"]`}, // what the library writes itself
		ListKeys: map[string]string{"containerStatuses": "name"},
	})
	if err != nil {
		return err
	}
	var f fired
	err = bus.Handle("crash-watch", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		for _, c := range ev.Changes.Under(opbus.MustParsePath("status.containerStatuses")) {
			f.add(fmt.Sprintf("crash-watch saw %s", c))
		}
		statuses, err := opbus.Get[[]containerStatus](ev.New, "status.containerStatuses")
		if err != nil && !errors.Is(err, opbus.ErrAbsent) { // absent: no container has started
			return opbus.Status{}, err
		}
		for _, cs := range statuses {
			if t := cs.State.Terminated; t != nil {
				return opbus.Blocked(fmt.Sprintf("container %s terminated: exit %d (%s)", cs.Name, t.ExitCode, t.Reason)), nil
			}
		}
		return opbus.Active(""), nil
	}, opbus.On{Types: []opbus.EventType{opbus.Update}, Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}})
	if err != nil {
		return err
	}
	err = bus.Handle("any-update", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		f.add(fmt.Sprintf("any-update saw %d changes", len(ev.Changes)))
		return opbus.Status{}, nil
	}, opbus.On{Types: []opbus.EventType{opbus.Update}, Kinds: []string{"Pod"}})
	if err != nil {
		return err
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- bus.Run(runCtx) }()

	key := opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}
	steps := []struct {
		what string
		obj  map[string]any
	}{
		{"the Pod is created, container running", pod("100", "", running)},
		{"the library writes its bookkeeping annotation", pod("101", `{"v":1}`, running)},
		{"the kubelet reports the container terminated", pod("102", `{"v":1}`, terminated)},
	}
	for _, s := range steps {
		if err := bus.Observe(ctx, key, s.obj); err != nil {
			return err
		}
		if err := bus.Wait(ctx); err != nil {
			return err
		}
		st, _, err := bus.Status(ctx, key)
		if err != nil {
			return err
		}
		fmt.Printf("%s\n   fired: %s\n   overall: %s\n", s.what, f.take(), show(st))
	}
	stop()
	return <-done
}

func scopedSlots(ctx context.Context) error {
	fmt.Println("== 2. scoped status slots, persisted across processes")
	dir, err := os.MkdirTemp("", "opbus-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := opbus.NewFileStore(dir)
	if err != nil {
		return err
	}
	key := opbus.Key{Kind: "unit", Name: "istio-gateway/0"}
	// process starts a new Bus on the same store, as a new Juju hook
	// process does, with handlers A (config) and B (relation).
	process := func() (*opbus.Bus, error) {
		bus, err := opbus.New(&opbus.Options{Store: store})
		if err != nil {
			return nil, err
		}
		err = bus.Handle("a-config", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			kind, err := opbus.Get[string](ev.New, "kind")
			if err != nil {
				return opbus.Status{}, err
			}
			if kind != "ingress" && kind != "egress" {
				return opbus.Blocked("config item 'kind' must be ingress or egress"), nil
			}
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"kind"}})
		if err != nil {
			return nil, err
		}
		err = bus.Handle("b-relation", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			_, err := opbus.Get[string](ev.New, "pilot.service")
			if errors.Is(err, opbus.ErrAbsent) {
				return opbus.Blocked("waiting for istio-pilot relation"), nil
			}
			if err != nil {
				return opbus.Status{}, err
			}
			return opbus.Active(""), nil
		}, opbus.On{Fields: []string{"pilot"}})
		return bus, err
	}
	steps := []struct {
		what string
		obj  map[string]any
	}{
		{"process 1: bad config, no relation", map[string]any{"kind": "", "pilot": nil}},
		{"process 2: config fixed (A recovers)", map[string]any{"kind": "ingress", "pilot": nil}},
		{"process 3: the relation arrives", map[string]any{"kind": "ingress", "pilot": map[string]any{"service": "istiod"}}},
	}
	for _, s := range steps {
		bus, err := process()
		if err != nil {
			return err
		}
		if err := bus.Dispatch(ctx, key, s.obj); err != nil {
			return err
		}
		st, slots, err := bus.Status(ctx, key)
		if err != nil {
			return err
		}
		fmt.Printf("%s\n   slots: %s\n   overall: %s\n", s.what, showSlots(slots), show(st))
	}
	return nil
}

func relatedObjects(ctx context.Context) error {
	fmt.Println("== 3. a related object: a WebApp waits for its Deployment")
	bus, err := opbus.New(nil)
	if err != nil {
		return err
	}
	// A Deployment relates to the WebApp that owns it (its ownerReferences).
	err = bus.Relate("Deployment", func(key opbus.Key, obj map[string]any) []opbus.Key {
		var owners []opbus.Key
		refs, _ := obj["metadata"].(map[string]any)["ownerReferences"].([]any)
		for _, r := range refs {
			if r := r.(map[string]any); r["kind"] == "WebApp" {
				owners = append(owners, opbus.Key{Kind: "WebApp", Namespace: key.Namespace, Name: r["name"].(string)})
			}
		}
		return owners
	})
	if err != nil {
		return err
	}
	var f fired
	err = bus.Handle("deployment-ready", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		want := ev.New["spec"].(map[string]any)["replicas"]
		deployments, _ := ev.New["related"].(map[string]any)["Deployment"].(map[string]any)
		f.add(fmt.Sprintf("deployment-ready sees %d Deployment(s)", len(deployments)))
		for name, d := range deployments {
			ready := d.(map[string]any)["status"].(map[string]any)["readyReplicas"]
			if ready != want {
				return opbus.Waiting(fmt.Sprintf("%s: %v/%v ready", name, ready, want)), nil
			}
		}
		if len(deployments) == 0 {
			return opbus.Waiting("no Deployment yet"), nil
		}
		return opbus.Active(""), nil
	}, opbus.On{Kinds: []string{"WebApp"}, Fields: []string{"spec.replicas", "related.Deployment[*].status.readyReplicas"}})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- bus.Run(runCtx) }()

	app := opbus.Key{Kind: "WebApp", Namespace: "default", Name: "shop"}
	web := opbus.Key{Kind: "Deployment", Namespace: "default", Name: "web"}
	steps := []struct {
		what string
		key  opbus.Key
		obj  map[string]any
	}{
		{"the WebApp is created", app, map[string]any{"spec": map[string]any{"replicas": 3}}},
		{"its Deployment is created", web, deployment("1", "app:1", 0)},
		{"the Deployment's image changes", web, deployment("2", "app:2", 0)},
		{"the Deployment becomes ready", web, deployment("3", "app:2", 3)},
	}
	for _, s := range steps {
		if err := bus.Observe(ctx, s.key, s.obj); err != nil {
			return err
		}
		if err := bus.Wait(ctx); err != nil {
			return err
		}
		st, _, err := bus.Status(ctx, app)
		if err != nil {
			return err
		}
		fmt.Printf("%s\n   fired: %s\n   WebApp: %s\n", s.what, f.take(), show(st))
	}
	stop()
	return <-done
}

func deployment(rv, image string, ready int) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"resourceVersion": rv, "ownerReferences": []any{
			map[string]any{"kind": "WebApp", "name": "shop", "controller": true}}},
		"spec":   map[string]any{"template": map[string]any{"image": image}},
		"status": map[string]any{"readyReplicas": ready},
	}
}

// containerStatus is the part of a Pod's status.containerStatuses that
// crash-watch reads, decoded by opbus.Get through its JSON form.
type containerStatus struct {
	Name  string `json:"name"`
	State struct {
		Terminated *struct {
			ExitCode int    `json:"exitCode"`
			Reason   string `json:"reason"`
		} `json:"terminated"`
	} `json:"state"`
}

func show(s opbus.Status) string {
	if s.IsZero() {
		return "(no status)"
	}
	return s.String()
}

func showSlots(s opbus.Slots) string {
	var parts []string
	for _, name := range s.Names() {
		parts = append(parts, name+"="+s[name].String())
	}
	return strings.Join(parts, ", ")
}

var (
	running    = map[string]any{"running": map[string]any{"startedAt": "2026-11-30T10:00:00Z"}}
	terminated = map[string]any{"terminated": map[string]any{"exitCode": 137, "reason": "OOMKilled"}}
)

func pod(rv, record string, state map[string]any) map[string]any {
	labels := map[string]string{"app": "web"} // the bus takes typed maps and slices too
	annotations := map[string]any{"team": "shop"}
	if record != "" {
		annotations["opbus.dev/record"] = record
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "resourceVersion": rv,
			"annotations": annotations, "labels": labels},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "example/app:1"}}},
		"status": map[string]any{"phase": "Running", "containerStatuses": []any{
			map[string]any{"name": "app", "ready": state["running"] != nil, "state": state},
		}},
	}
}

func timers(ctx context.Context) error {
	fmt.Println("== 4. a timer, and \"not done yet, look again later\"")
	bus, err := opbus.New(nil)
	if err != nil {
		return err
	}
	var f fired
	beats := make(chan struct{}, 3)
	// Runs when the spec changes and, even if nothing changes, every 100ms.
	err = bus.Handle("heartbeat", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		if ev.Due {
			select {
			case beats <- struct{}{}:
			default:
			}
		}
		return opbus.Active(""), nil
	}, opbus.On{Fields: []string{"spec"}, Every: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	checks := 0
	ready := make(chan struct{})
	// Polls an outside system: handled for now, look again in 100ms.
	err = bus.Handle("database", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		if checks++; checks < 3 {
			ev.Again(100 * time.Millisecond)
			f.add(fmt.Sprintf("check %d: not ready, look again in 100ms", checks))
			return opbus.Waiting("database starting"), nil
		}
		f.add(fmt.Sprintf("check %d: ready", checks))
		close(ready)
		return opbus.Active(""), nil
	}, opbus.On{Fields: []string{"spec.database"}})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- bus.Run(runCtx) }()
	key := opbus.Key{Kind: "Shop", Namespace: "default", Name: "web"}
	if err := bus.Observe(ctx, key, map[string]any{"spec": map[string]any{"database": "pg"}}); err != nil {
		return err
	}
	if err := bus.Wait(ctx); err != nil {
		return err
	}
	st, _, err := bus.Status(ctx, key)
	if err != nil {
		return err
	}
	fmt.Printf("the Shop is created\n   database: %s\n   overall: %s\n", f.first(), show(st)) // a later check may have run since
	<-ready
	<-beats
	<-beats
	if err := bus.Wait(ctx); err != nil {
		return err
	}
	st, _, err = bus.Status(ctx, key)
	if err != nil {
		return err
	}
	_, later, _ := strings.Cut(f.take(), "\n") // after the first
	fmt.Printf("nothing changes; the bus looks again when asked\n   database: %s\n   heartbeat: ran when due, twice or more\n   overall: %s\n   failures counted: %d\n", strings.TrimSpace(later), show(st), bus.Stats().Failed)
	stop()
	return <-done
}
