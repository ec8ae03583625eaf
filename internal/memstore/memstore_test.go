package memstore

import (
	"cmp"
	"context"
	"slices"
	"testing"
)

func TestMap(t *testing.T) {
	var m Map[string]
	ctx := t.Context()
	data := []byte("a")
	must(t, m.Save(ctx, "x", data))
	data[0] = 'b' // Save kept a copy
	must(t, m.Keep(ctx, "w", data))
	data[0] = 'c' // Keep kept data itself
	for _, tc := range []struct{ key, want string }{{"x", "a"}, {"w", "c"}, {"none", ""}} {
		if got, err := m.Load(ctx, tc.key); err != nil || string(got) != tc.want {
			t.Errorf("Load(%q) = %q, %v, want %q", tc.key, got, err, tc.want)
		}
	}
	if got := m.Keys(cmp.Compare[string]); !slices.Equal(got, []string{"w", "x"}) {
		t.Errorf("Keys = %v, want [w x]", got)
	}
	must(t, m.Delete(ctx, "x"))
	must(t, m.Delete(ctx, "x")) // a missing record is no error
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Save(cancelled, "y", nil); err != context.Canceled {
		t.Errorf("Save with a cancelled ctx = %v, want %v", err, context.Canceled)
	}
	if got := m.Keys(cmp.Compare[string]); !slices.Equal(got, []string{"w"}) {
		t.Errorf("Keys = %v, want [w]", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
