package fsm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

func TestOnErrors(t *testing.T) {
	tests := []struct {
		name string
		rule fsm.Rule
		want string
	}{
		{"empty ID", fsm.Rule{Field: "spec", Fire: "crash"}, "rule ID: empty name"},
		{"malformed ID", fsm.Rule{ID: "on crash", Field: "spec", Fire: "crash"}, `rule ID: name "on crash"`},
		{"the state handler's ID", fsm.Rule{ID: "state", Field: "spec", Fire: "crash"}, `rule ID "state" is the machine's own handler`},
		{"ID used twice", fsm.Rule{ID: "started", Field: "spec", Fire: "crash"}, `rule "started" declared twice`},
		{"bad field path", fsm.Rule{ID: "r", Field: "status..phase", Fire: "crash"}, `rule "r": opbus: field path status..phase`},
		{"undeclared event", fsm.Rule{ID: "r", Field: "spec", Fire: "crsh"}, `rule "r": event "crsh" is not declared (declared: crash, recover, start)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := fsm.New(podSpec())
			if err != nil {
				t.Fatal(err)
			}
			if err := podRules(m); err != nil {
				t.Fatal(err)
			}
			err = m.AddRule(tt.rule)
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, `fsm: machine "lifecycle": `) || !strings.Contains(msg, tt.want) {
				t.Errorf("got error %q, want one starting with fsm: machine \"lifecycle\" and containing %q", msg, tt.want)
			}
		})
	}
}

var errCooldown = errors.New("restarted less than a minute ago")

func TestRule(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		guard     fsm.Guard // on recover
		steps     []podStep
		wantErr   error  // of the last step's dispatch
		wantSlot  string // message of the slot of the rule "recovered" after the last step
		wantState string
	}{{
		name: "fires only from the event's sources",
		steps: []podStep{
			{container: "running"}, {container: "terminated"},
			// recovered fires; started also holds but not from failed
			{container: "running", restarts: 1},
		},
		wantState: "running",
	}, {
		name:      "does nothing where When does not hold",
		steps:     []podStep{{container: "waiting"}, {container: "waiting", restarts: 1}},
		wantState: "pending",
	}, {
		name: "a refusing guard fails the rule's handler, which shows in its slot",
		guard: func(context.Context, *opbus.Event, fsm.Transition) error {
			return errCooldown
		},
		steps:     []podStep{{container: "running"}, {container: "terminated"}, {container: "running", restarts: 1}},
		wantErr:   fsm.ErrRefused,
		wantSlot:  "restarted less than a minute ago",
		wantState: "failed",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := podSpec()
			spec.Triggers[2].Guard = tt.guard
			bus, err := opbus.New(&opbus.Options{ListKeys: map[string]string{"containerStatuses": "name"}})
			if err != nil {
				t.Fatal(err)
			}
			m, err := fsm.New(spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Register(bus); err != nil {
				t.Fatal(err)
			}
			// Rules added after Register are registered at once.
			if err := podRules(m); err != nil {
				t.Fatal(err)
			}
			var state string
			err = bus.Handle("probe", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				var err error
				state, err = m.State(ev)
				return opbus.Status{}, err
			}, opbus.On{Fields: []string{containerStatuses}})
			if err != nil {
				t.Fatal(err)
			}
			var derr error
			for _, s := range tt.steps {
				derr = bus.Dispatch(ctx, podKey, pod("web", s.container, s.restarts))
			}
			if !errors.Is(derr, tt.wantErr) {
				t.Fatalf("got dispatch error %v, want %v", derr, tt.wantErr)
			}
			if state != tt.wantState {
				t.Errorf("got state %q, want %q", state, tt.wantState)
			}
			_, slots, err := bus.Status(ctx, podKey)
			if err != nil {
				t.Fatal(err)
			}
			slot := slots["lifecycle/recovered"]
			if !strings.Contains(slot.Message, tt.wantSlot) || (tt.wantSlot == "") != slot.IsZero() {
				t.Errorf("got slot lifecycle/recovered %v, want one with %q", slot, tt.wantSlot)
			}

			// Once the bus has started, rules can no longer be added.
			err = m.AddRule(fsm.Rule{ID: "late", Field: "spec", Fire: "crash"})
			if err == nil || !strings.Contains(err.Error(), "the bus has started") {
				t.Errorf("got %v adding a rule to a started bus, want an error", err)
			}
		})
	}
}
