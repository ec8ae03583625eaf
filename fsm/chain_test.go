package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

// chainSpec is a → b → c with "back" from b to a, "stay" from b to b, and
// the given Enter actions and guard.
func chainSpec(enterA, enterB fsm.Action, guardGo fsm.Guard) fsm.Spec {
	return fsm.Spec{
		Name:    "chain",
		Initial: "a",
		States: []fsm.State{
			{Name: "a", Status: opbus.Waiting("at a"), Enter: enterA},
			{Name: "b", Status: opbus.Maintenance("at b"), Enter: enterB},
			{Name: "c", Status: opbus.Active("at c")},
		},
		Triggers: []fsm.Trigger{
			{Name: "go", Src: []string{"a"}, Dst: "b", Guard: guardGo},
			{Name: "next", Src: []string{"b"}, Dst: "c"},
			{Name: "back", Src: []string{"b"}, Dst: "a"},
			{Name: "stay", Src: []string{"b"}, Dst: "b"},
		},
	}
}

var errEnter = errors.New("cannot provision")

func TestChain(t *testing.T) {
	var h *harness // the harness of the running case, for actions that call Fire
	returns := func(next string) fsm.Action {
		return func(context.Context, *opbus.Event, fsm.Transition) (string, error) { return next, nil }
	}
	step := func(e, from, to string) fsm.Transition { return fsm.Transition{Event: e, From: from, To: to} }
	tests := []struct {
		name       string
		spec       fsm.Spec
		path       []string
		fire       string
		wantErr    error
		wantMsgs   []string
		wantSteps  []fsm.Transition
		wantState  string
		wantStatus opbus.Status
	}{{
		name:       "Enter returns the next event, fired after the transition completes",
		spec:       chainSpec(nil, returns("next"), nil),
		fire:       "go",
		wantSteps:  []fsm.Transition{step("go", "a", "b"), step("next", "b", "c")},
		wantState:  "c",
		wantStatus: opbus.Active("at c"),
	}, {
		name: "Enter sees the transition and the event",
		spec: chainSpec(nil, func(_ context.Context, ev *opbus.Event, tr fsm.Transition) (string, error) {
			if tr != step("go", "a", "b") || ev.Key.Name != "j1" {
				return "", fmt.Errorf("got %v on %v", tr, ev.Key)
			}
			return "", nil
		}, nil),
		fire:       "go",
		wantSteps:  []fsm.Transition{step("go", "a", "b")},
		wantState:  "b",
		wantStatus: opbus.Maintenance("at b"),
	}, {
		name:       "a self-transition does not run Enter",
		spec:       chainSpec(nil, func(context.Context, *opbus.Event, fsm.Transition) (string, error) { return "", errEnter }, nil),
		path:       []string{"go"}, // fails in Enter, but the transition stands
		fire:       "stay",
		wantSteps:  []fsm.Transition{step("stay", "b", "b")},
		wantState:  "b",
		wantStatus: opbus.Maintenance("at b"),
	}, {
		name:       "Enter returns an event the new state does not allow: the first transition stands",
		spec:       chainSpec(nil, returns("go"), nil),
		fire:       "go",
		wantErr:    fsm.ErrNotAllowed,
		wantMsgs:   []string{`event "go"`, `state "b"`, "allowed: back, next, stay"},
		wantSteps:  []fsm.Transition{step("go", "a", "b")},
		wantState:  "b",
		wantStatus: opbus.Maintenance("at b"),
	}, {
		name:       "Enter fails: the transition stands and the error is returned",
		spec:       chainSpec(nil, func(context.Context, *opbus.Event, fsm.Transition) (string, error) { return "", errEnter }, nil),
		fire:       "go",
		wantErr:    errEnter,
		wantMsgs:   []string{`entering "b" by "go"`, "cannot provision"},
		wantSteps:  []fsm.Transition{step("go", "a", "b")},
		wantState:  "b",
		wantStatus: opbus.Maintenance("at b"),
	}, {
		name:       "Enter actions that loop end after MaxChain transitions",
		spec:       chainSpec(returns("go"), returns("back"), nil),
		fire:       "go",
		wantErr:    errMarker,
		wantMsgs:   []string{fmt.Sprintf("made %d transitions", fsm.MaxChain), "loop"},
		wantState:  "a", // MaxChain is even: the last step recorded is back to a
		wantStatus: opbus.Waiting("at a"),
	}, {
		name: "Fire from a guard returns ErrInTransition instead of deadlocking (looplab/fsm issue 36)",
		spec: chainSpec(nil, nil, func(ctx context.Context, ev *opbus.Event, _ fsm.Transition) error {
			_, err := h.m.Fire(ctx, ev, "next")
			return err
		}),
		fire:       "go",
		wantErr:    fsm.ErrInTransition,
		wantMsgs:   []string{`refused by its guard`, `Fire("next") during a transition`},
		wantState:  "a",
		wantStatus: opbus.Waiting("at a"),
	}, {
		name: "Fire from an Enter action returns ErrInTransition; returning the event chains",
		spec: chainSpec(nil, func(ctx context.Context, ev *opbus.Event, _ fsm.Transition) (string, error) {
			if _, err := h.m.Fire(ctx, ev, "next"); !errors.Is(err, fsm.ErrInTransition) {
				return "", fmt.Errorf("got %v, want ErrInTransition", err)
			}
			return "next", nil
		}, nil),
		fire:       "go",
		wantSteps:  []fsm.Transition{step("go", "a", "b"), step("next", "b", "c")},
		wantState:  "c",
		wantStatus: opbus.Active("at c"),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h = newHarness(t, tt.spec, nil)
			for _, e := range tt.path {
				_, _ = h.fire(e)
			}
			done := make(chan struct{})
			var res fsm.Result
			var err error
			go func() {
				defer close(done)
				res, err = h.fire(tt.fire)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Fire did not return: deadlock")
			}
			if errors.Is(tt.wantErr, errMarker) {
				err = errors.Join(err, errMarker)
			}
			checkErr(t, err, tt.wantErr, tt.wantMsgs...)
			if tt.wantSteps != nil && !slices.Equal(res.Steps(), tt.wantSteps) {
				t.Errorf("got steps %v, want %v", res.Steps(), tt.wantSteps)
			}
			if tt.wantErr == errMarker && len(res.Steps()) != fsm.MaxChain {
				t.Errorf("got %d steps, want MaxChain = %d", len(res.Steps()), fsm.MaxChain)
			}
			if got := h.state(); got != tt.wantState {
				t.Errorf("got state %q, want %q", got, tt.wantState)
			}
			if _, slot := h.status(); slot != tt.wantStatus {
				t.Errorf("got slot %v, want %v", slot, tt.wantStatus)
			}
		})
	}
}
