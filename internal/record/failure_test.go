package record

import "testing"

type digest [16]byte

func TestFail(t *testing.T) {
	r := New[digest, slots, *timer](1)
	one, two := digest{1}, digest{2}
	if got := r.Attempt("h", one); got != 1 {
		t.Errorf("first attempt: got %d, want 1", got)
	}
	r.Fail("h", one)
	if f := r.Fail("h", one); f.N != 2 || f.On != one {
		t.Errorf("got %+v, want two attempts failed on the value", f)
	}
	if got := r.Attempt("h", one); got != 3 {
		t.Errorf("got attempt %d, want 3", got)
	}
	if r.FailureOn("h", two) != nil || r.Attempt("h", two) != 1 {
		t.Error("a failure on another value counts for this one")
	}
	if f := r.Fail("h", two); f.N != 1 || r.FailureOn("h", one) != nil {
		t.Errorf("got %+v, want a failure on the new value replacing the old one", f)
	}
}

func TestSetValue(t *testing.T) {
	r := New[digest, slots, *timer](0)
	steps := []struct {
		value   string
		changed bool
	}{{"a", true}, {"a", false}, {"b", true}, {"", true}, {"", false}}
	for _, s := range steps {
		if got := r.SetValue("v", s.value); got != s.changed {
			t.Errorf("SetValue(%q): got %v, want %v", s.value, got, s.changed)
		}
		if got := r.Values["v"]; got != s.value {
			t.Errorf("after SetValue(%q): got %q", s.value, got)
		}
	}
	if _, ok := r.Values["v"]; ok {
		t.Error(`SetValue("") left the value in the record`)
	}
}
