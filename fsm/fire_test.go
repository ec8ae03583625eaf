package fsm_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/fsm"
)

func TestFire(t *testing.T) {
	tests := []struct {
		name       string
		path       []string // events fired first, each must succeed
		fire       string
		wantErr    error
		wantMsgs   []string
		wantState  string
		wantSteps  []fsm.Transition
		wantStatus opbus.Status
	}{{
		name:       "allowed from the initial state",
		fire:       "submit",
		wantState:  "queued",
		wantSteps:  []fsm.Transition{{Event: "submit", From: "idle", To: "queued"}},
		wantStatus: opbus.Waiting("queued"),
	}, {
		name:       "allowed from the second of two sources",
		path:       []string{"submit", "start"},
		fire:       "fail",
		wantState:  "failed",
		wantSteps:  []fsm.Transition{{Event: "fail", From: "running", To: "failed"}},
		wantStatus: opbus.Blocked("job failed"),
	}, {
		name:       "a cycle back to an earlier state",
		path:       []string{"submit", "fail"},
		fire:       "retry",
		wantState:  "queued",
		wantSteps:  []fsm.Transition{{Event: "retry", From: "failed", To: "queued"}},
		wantStatus: opbus.Waiting("queued"),
	}, {
		name:       "a self-transition is a result, not an error",
		path:       []string{"submit", "start"},
		fire:       "touch",
		wantState:  "running",
		wantSteps:  []fsm.Transition{{Event: "touch", From: "running", To: "running"}},
		wantStatus: opbus.Active("running"),
	}, {
		name:      "refused: the state is not a source; names the object, event, state and allowed events",
		fire:      "start",
		wantErr:   fsm.ErrNotAllowed,
		wantMsgs:  []string{`machine "job"`, "Job ns/j1", `event "start"`, `state "idle"`, "allowed: submit)"},
		wantState: "idle",
	}, {
		name:       "refused: allowed events are listed sorted",
		path:       []string{"submit", "start"},
		fire:       "retry",
		wantErr:    fsm.ErrNotAllowed,
		wantMsgs:   []string{`event "retry"`, `state "running"`, "allowed: fail, finish, touch)"},
		wantState:  "running",
		wantStatus: opbus.Active("running"),
	}, {
		name:       "refused: a final state allows nothing",
		path:       []string{"submit", "start", "finish"},
		fire:       "fail",
		wantErr:    fsm.ErrNotAllowed,
		wantMsgs:   []string{`state "done"`, "allowed: none"},
		wantState:  "done",
		wantStatus: opbus.Active("done"),
	}, {
		name:      "refused: an undeclared event",
		fire:      "launch",
		wantErr:   fsm.ErrUnknownEvent,
		wantMsgs:  []string{`unknown event "launch"`, "declared: fail, finish, retry, start, submit, touch"},
		wantState: "idle",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, jobSpec(), nil)
			h.mustFire(tt.path...)
			res, err := h.fire(tt.fire)
			checkErr(t, err, tt.wantErr, tt.wantMsgs...)
			if !slices.Equal(res.Steps(), tt.wantSteps) {
				t.Errorf("got steps %v, want %v", res.Steps(), tt.wantSteps)
			}
			if err == nil && res.To != tt.wantState {
				t.Errorf("got Result.To %q, want %q", res.To, tt.wantState)
			}
			if got, want := res.Changed(), err == nil && res.From != tt.wantState; got != want {
				t.Errorf("got Changed() %v, want %v", got, want)
			}
			if got := h.state(); got != tt.wantState {
				t.Errorf("got state %q, want %q", got, tt.wantState)
			}
			overall, slot := h.status()
			if slot != tt.wantStatus || overall != tt.wantStatus {
				t.Errorf("got slot %v and overall %v, want %v", slot, overall, tt.wantStatus)
			}
		})
	}
}

// Fire reports, and does not record, a transition it cannot record.
func TestFireWithoutRecord(t *testing.T) {
	m, err := fsm.New(jobSpec())
	if err != nil {
		t.Fatal(err)
	}
	other, err := opbus.New(nil) // a bus the machine is not registered with
	if err != nil {
		t.Fatal(err)
	}
	var inOther error
	err = other.Handle("drive", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		_, inOther = m.Fire(ctx, ev, "submit")
		return opbus.Status{}, nil
	}, opbus.On{})
	if err != nil {
		t.Fatal(err)
	}
	key := opbus.Key{Kind: "Job", Name: "j"}
	if err := other.Dispatch(context.Background(), key, map[string]any{"spec": 1}); err != nil {
		t.Fatal(err)
	}
	_, outside := m.Fire(context.Background(), &opbus.Event{Key: key}, "submit")
	_, nilEvent := m.Fire(context.Background(), nil, "submit")

	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"from a bus the machine is not registered with", inOther, `recording state "queued"`},
		{"outside a dispatch", outside, "not being dispatched"},
		{"with a nil event", nilEvent, "nil event"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			checkErr(t, errors.Join(tt.err, errMarker), errMarker, tt.want)
		})
	}
}

// errMarker lets checkErr check messages of errors that wrap no sentinel.
var errMarker = errors.New("marker")

var errNoRoom = errors.New("no node has room")

func TestGuard(t *testing.T) {
	want := fsm.Transition{Event: "start", From: "queued", To: "running"}
	tests := []struct {
		name      string
		guard     func(cancel context.CancelFunc) fsm.Guard
		wantErr   error
		wantCause error
		wantMsgs  []string
		wantPanic bool
		wantState string
	}{{
		name: "allows, seeing the event and the transition",
		guard: func(context.CancelFunc) fsm.Guard {
			return func(ctx context.Context, ev *opbus.Event, tr fsm.Transition) error {
				if ev == nil || ev.Key.Name != "j1" || ev.Handler != "drive" || tr != want {
					return errors.New("wrong arguments")
				}
				return nil
			}
		},
		wantState: "running",
	}, {
		name: "refuses with its reason",
		guard: func(context.CancelFunc) fsm.Guard {
			return func(context.Context, *opbus.Event, fsm.Transition) error { return errNoRoom }
		},
		wantErr:   fsm.ErrRefused,
		wantCause: errNoRoom,
		wantMsgs:  []string{"Job ns/j1", `event "start"`, `state "queued"`, "no node has room"},
		wantState: "queued",
	}, {
		name: "refuses on the object's data",
		guard: func(context.CancelFunc) fsm.Guard {
			return func(ctx context.Context, ev *opbus.Event, _ fsm.Transition) error {
				if n, _ := ev.New["spec"].(map[string]any)["n"].(int); n < 100 {
					return errors.New("n is below 100")
				}
				return nil
			}
		},
		wantErr:   fsm.ErrRefused,
		wantMsgs:  []string{"n is below 100"},
		wantState: "queued",
	}, {
		name: "panics: the bus recovers and the machine is still usable",
		guard: func(context.CancelFunc) fsm.Guard {
			return func(context.Context, *opbus.Event, fsm.Transition) error { panic("guard bug") }
		},
		wantPanic: true,
		wantState: "queued",
	}, {
		name: "the context ends during the guard: no transition, and looplab is not left wedged",
		guard: func(cancel context.CancelFunc) fsm.Guard {
			return func(context.Context, *opbus.Event, fsm.Transition) error { cancel(); return nil }
		},
		wantErr:   context.Canceled,
		wantMsgs:  []string{`event "start"`, `state "queued"`},
		wantState: "queued",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var guard fsm.Guard
			spec := jobSpec()
			spec.Triggers[1].Guard = func(ctx context.Context, ev *opbus.Event, tr fsm.Transition) error {
				return guard(ctx, ev, tr)
			}
			h := newHarness(t, spec, nil)
			h.mustFire("submit")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			guard = tt.guard(cancel)
			var res fsm.Result
			var err error
			derr := h.run(ctx, func(ctx context.Context, ev *opbus.Event) error {
				res, err = h.m.Fire(ctx, ev, "start")
				return nil
			})
			var pe *opbus.PanicError
			if got := errors.As(derr, &pe); got != tt.wantPanic {
				t.Fatalf("got dispatch error %v, want a panic: %v", derr, tt.wantPanic)
			}
			if !tt.wantPanic {
				checkErr(t, err, tt.wantErr, tt.wantMsgs...)
			}
			if tt.wantCause != nil && !errors.Is(err, tt.wantCause) {
				t.Errorf("got error %v, want one wrapping %v", err, tt.wantCause)
			}
			if err != nil && len(res.Steps()) != 0 {
				t.Errorf("got steps %v after an error, want none", res.Steps())
			}
			if got := h.state(); got != tt.wantState {
				t.Errorf("got state %q, want %q", got, tt.wantState)
			}
			if tt.wantState == "queued" {
				guard = func(context.Context, *opbus.Event, fsm.Transition) error { return nil }
				if _, err := h.fire("start"); err != nil {
					t.Fatalf("Fire after the guard allows: %v", err)
				}
				if got := h.state(); got != "running" {
					t.Errorf("got state %q after the guard allows, want running", got)
				}
			}
		})
	}
}
