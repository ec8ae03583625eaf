package opbus

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestStatusReasonSyntax: validReason accepts Kubernetes condition reasons
// and nothing else.
func TestStatusReasonSyntax(t *testing.T) {
	for _, tc := range []struct {
		reason string
		ok     bool
	}{
		{"InvalidSchedule", true},
		{"a", true},
		{"Pod_Crash:Looping,Again2", true},
		{"", false},           // checked only when set
		{"9Lives", false},     // must start with a letter
		{"Ends:", false},      // ',' and ':' only inside
		{"Ends,", false},      //
		{"Has Space", false},  // no spaces
		{"crash-loop", false}, // no '-'
		{"Été", false},        // ASCII only
		{strings.Repeat("A", 1024), true},
		{strings.Repeat("A", 1025), false}, // at most 1024 bytes
	} {
		if got := validReason(tc.reason); got != tc.ok {
			t.Errorf("validReason(%q) = %v, want %v", tc.reason, got, tc.ok)
		}
	}
}

// TestStatusReasonKeptAndSummarised: a handler's reason is kept in its
// slot, survives the record's JSON, shows in String, and the summary
// takes the reason of the first deciding slot that has one.
func TestStatusReasonKeptAndSummarised(t *testing.T) {
	b := newBus(t, nil)
	must(t, b.Handle("b-schedule", func(ctx context.Context, ev *Event) (Status, error) {
		return Blocked("spec.schedule is not a cron line").WithReason("InvalidSchedule"), nil
	}, On{}))
	must(t, b.Handle("a-size", func(ctx context.Context, ev *Event) (Status, error) {
		return Blocked("too big"), nil // no reason: the next deciding slot's is used
	}, On{}))
	must(t, b.Handle("c-ok", func(ctx context.Context, ev *Event) (Status, error) {
		return Active("").WithReason("Fine"), nil // not deciding
	}, On{}))
	must(t, b.Dispatch(t.Context(), podKey, map[string]any{"a": 1}))
	overall, slots, err := b.Status(t.Context(), podKey)
	must(t, err)
	if got := slots["b-schedule"].Reason; got != "InvalidSchedule" {
		t.Errorf("slot reason %q, want InvalidSchedule", got)
	}
	if overall.Reason != "InvalidSchedule" || overall.Level != LevelBlocked {
		t.Errorf("overall %+v, want blocked with reason InvalidSchedule", overall)
	}
	if got, want := slots["b-schedule"].String(), "blocked (InvalidSchedule): spec.schedule is not a cron line"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	buf, err := appendSlotsJSON(nil, "", slots)
	must(t, err)
	var back Slots
	must(t, json.Unmarshal(buf, &back))
	if back["b-schedule"] != slots["b-schedule"] || back["a-size"] != slots["a-size"] {
		t.Errorf("slots after JSON %+v, want %+v", back, slots)
	}
	var old Status // a record written before reasons existed
	must(t, json.Unmarshal([]byte(`{"level":"blocked","message":"m"}`), &old))
	if old != Blocked("m") {
		t.Errorf("old status read as %+v, want %+v", old, Blocked("m"))
	}
}

// TestStatusBadReasonFails: a handler returning a reason that is not a
// CamelCase word fails, and its slot's Error status names the reason; a
// bad reason given to SetSlot is refused; a handler that fails anyway
// keeps its status without the reason.
func TestStatusBadReasonFails(t *testing.T) {
	b := newBus(t, nil)
	must(t, b.AddSlot("machine"))
	var setErr error
	must(t, b.Handle("bad", func(ctx context.Context, ev *Event) (Status, error) {
		setErr = ev.SetSlot("machine", Waiting("").WithReason("not a reason"))
		return Blocked("x").WithReason("invalid-schedule"), nil
	}, On{}))
	must(t, b.Handle("failing", func(ctx context.Context, ev *Event) (Status, error) {
		return Blocked("wait").WithReason("Bad Reason"), Permanent(errSim)
	}, On{}))
	if err := b.Dispatch(t.Context(), podKey, map[string]any{"a": 1}); err == nil || !strings.Contains(err.Error(), `handler "bad"`) {
		t.Errorf("Dispatch: %v, want the bad handler's error", err)
	}
	_, slots, err := b.Status(t.Context(), podKey)
	must(t, err)
	got := slots["bad"]
	if got.Level != LevelError || !strings.Contains(got.Message, `"invalid-schedule"`) || !strings.Contains(got.Message, "CamelCase") {
		t.Errorf("slot of a bad reason: %v, want an error naming the reason and the syntax", got)
	}
	if setErr == nil || !strings.Contains(setErr.Error(), `"not a reason"`) {
		t.Errorf("SetSlot with a bad reason: %v, want an error naming it", setErr)
	}
	if got := slots["failing"]; got != Blocked("wait") {
		t.Errorf("slot of a failed handler with a bad reason: %+v, want %+v", got, Blocked("wait"))
	}
}
