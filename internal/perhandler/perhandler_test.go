package perhandler

import "testing"

func TestClean(t *testing.T) {
	var c Clean
	for _, i := range []int{0, 5, 63, 64, 100} {
		c.Set(i, true)
		if got, want := c.Is(i), i < 64; got != want {
			t.Errorf("after Set(%d, true): Is = %v, want %v", i, got, want)
		}
		c.Set(i, false)
		if c.Is(i) {
			t.Errorf("after Set(%d, false): Is = true, want false", i)
		}
	}
}

func TestState(t *testing.T) {
	var nilState *State
	if nilState.Owes(0) {
		t.Error("a nil State owes a Resume run")
	}
	if _, behind := nilState.Behind(0); behind {
		t.Error("a nil State holds a handler behind")
	}
	nilState.Paid(0)
	nilState.Forget(0)
	nilState.Reset()

	var s State
	s.Owe(3, func(i int) bool { return i != 1 })
	if !s.Owes(0) || s.Owes(1) || !s.Owes(2) || s.Owes(3) {
		t.Errorf("got owed %v, want [true false true]", s.owed)
	}
	s.Paid(0)
	if s.Owes(0) {
		t.Error("handler 0 owes a Resume run after Paid")
	}
	first, second := map[string]any{"v": 1}, map[string]any{"v": 2}
	s.FellBehind(2, first)
	s.FellBehind(2, second)
	if old, behind := s.Behind(2); !behind || old["v"] != 1 {
		t.Errorf("got %v, %v, want the first state noted, true", old, behind)
	}
	s.FellBehind(1, nil)
	if old, behind := s.Behind(1); !behind || old != nil {
		t.Errorf("got %v, %v, want nil, true (it had handled nothing)", old, behind)
	}
	s.Forget(2)
	if _, behind := s.Behind(2); behind {
		t.Error("handler 2 is behind after Forget")
	}
	s.Reset()
	if s.Owes(2) || s.behind != nil {
		t.Errorf("got %+v after Reset, want the zero State", s)
	}
}
