package opbus

import (
	"context"
	"strings"
	"testing"
)

// TestSetSlotSaysWhatToCall: SetSlot on a slot nobody registered names
// Bus.AddSlot; on a handler's own slot it says the handler owns it; and
// SetValue and SetSlot on an Event that is not being dispatched are errors.
func TestSetSlotSaysWhatToCall(t *testing.T) {
	b := newBus(t, nil)
	var unknown, own error
	must(t, b.AddSlot("machine"))
	must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
		unknown = ev.SetSlot("nope", Active(""))
		own = ev.SetSlot("h", Active(""))
		return Active(""), ev.SetSlot("machine", Waiting("starting"))
	}, On{}))
	must(t, b.Dispatch(t.Context(), podKey, map[string]any{"a": 1}))
	if unknown == nil || !strings.Contains(unknown.Error(), `Bus.AddSlot("nope")`) {
		t.Errorf("SetSlot on an unregistered slot: %v, want it to name Bus.AddSlot", unknown)
	}
	if own == nil || !strings.Contains(own.Error(), "handler's own") {
		t.Errorf("SetSlot on a handler's slot: %v, want it to say the handler owns it", own)
	}
	if st, _, _ := b.Status(t.Context(), podKey); st.Level != LevelWaiting {
		t.Errorf("status %v, want the machine's waiting", st)
	}
	var ev Event
	if err := ev.SetValue("x", "1"); err == nil {
		t.Error("SetValue outside a dispatch returned nil")
	}
	if err := ev.SetSlot("machine", Active("")); err == nil {
		t.Error("SetSlot outside a dispatch returned nil")
	}
}
