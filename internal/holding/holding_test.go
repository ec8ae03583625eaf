package holding

import (
	"context"
	"testing"
)

// valueKey is a context key of the test's own, to check that a Holding
// passes other values through.
type valueKey struct{}

func TestHolds(t *testing.T) {
	ctx := context.Background()
	if Holds(ctx, "a") {
		t.Fatalf("Holds(background, a) = true, want false")
	}
	actx, a := With(ctx, "a")
	bctx, b := With(context.WithValue(actx, valueKey{}, 1), "b")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		key  string
		want bool
	}{
		{"own key", actx, "a", true},
		{"other key", actx, "b", false},
		{"inner key", bctx, "b", true},
		{"outer key through another", bctx, "a", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Holds(tc.ctx, tc.key); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if bctx.Value(valueKey{}) != 1 {
		t.Errorf("got %v, want the parent's value 1", bctx.Value(valueKey{}))
	}
	a.End()
	if Holds(bctx, "a") {
		t.Errorf("Holds(bctx, a) after a.End = true, want false")
	}
	if !Holds(bctx, "b") {
		t.Errorf("Holds(bctx, b) = false, want true")
	}
	b.End()
	if Holds(bctx, "b") {
		t.Errorf("Holds(bctx, b) after b.End = true, want false")
	}
}
