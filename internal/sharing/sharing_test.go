package sharing

import (
	"context"
	"errors"
	"testing"
)

func TestOwns(t *testing.T) {
	var o Ops[int]
	if o.Made() || !o.Owns(1) {
		t.Fatalf("zero Ops: got Made %v, Owns(1) %v, want false, true", o.Made(), o.Owns(1))
	}
	o.Release(func(k int) bool { return k < 10 })
	o.Acquire(func(k int) bool { return k < 5 })
	for _, c := range []struct {
		key  int
		want bool
	}{{1, true}, {7, false}, {12, true}} {
		if got := o.Owns(c.key); got != c.want {
			t.Errorf("Owns(%d): got %v, want %v", c.key, got, c.want)
		}
	}
}

func TestContexts(t *testing.T) {
	var c Contexts[string]
	c.Cancel("a", errors.New("none yet")) // no context: nothing to do
	a := c.For(context.Background(), "a")
	if again := c.For(context.TODO(), "a"); again != a {
		t.Fatal("For made a second context for a key that has one")
	}
	cause := errors.New("released")
	c.Cancel("a", cause)
	if got := context.Cause(a); got != cause {
		t.Fatalf("cause: got %v, want %v", got, cause)
	}
	if c.For(context.Background(), "a") != a {
		t.Fatal("Cancel dropped the context: want it kept until End")
	}
	b := c.For(context.Background(), "b")
	c.End("b")
	if b.Err() == nil {
		t.Fatal("End left the context running")
	}
	if c.For(context.Background(), "b") == b {
		t.Fatal("End kept the context")
	}
}
