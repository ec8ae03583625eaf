package bounded

import "testing"

func TestMapKeepsItsBound(t *testing.T) {
	m := New[int, string](3)
	for i := range 10 {
		m.Put(i, "v")
		if got, want := m.Len(), min(i+1, 3); got != want {
			t.Fatalf("after %d puts: got %d entries, want %d", i+1, got, want)
		}
	}
	if v, ok := m.Take(9); !ok || v != "v" {
		t.Fatalf("Take(9): got %q, %v, want the last put", v, ok)
	}
	if _, ok := m.Take(9); ok {
		t.Fatal("Take(9) again: got an entry, want none")
	}
	m.Put(20, "w")
	m.Delete(20)
	m.Delete(20)
	if got := m.Len(); got != 2 {
		t.Fatalf("got %d entries, want 2", got)
	}
}
