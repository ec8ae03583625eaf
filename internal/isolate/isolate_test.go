package isolate

import (
	"strings"
	"testing"
)

func TestCall(t *testing.T) {
	ran := false
	if p := Call(true, func() { ran = true }); p != nil || !ran {
		t.Errorf("got %v, ran %v, want nil, true", p, ran)
	}
	p := Call(true, func() { panic("boom") })
	if p == nil || p.Value != "boom" {
		t.Fatalf("got %v, want the panic boom", p)
	}
	if !strings.Contains(string(p.Stack), "TestCall") {
		t.Errorf("the stack does not show the panicking frames:\n%s", p.Stack)
	}
	defer func() {
		if v := recover(); v != "off" {
			t.Errorf("got %v, want the panic to go on with recovery off", v)
		}
	}()
	Call(false, func() { panic("off") })
	t.Error("Call returned from a panic with recovery off")
}
