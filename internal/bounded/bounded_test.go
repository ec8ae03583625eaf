package bounded

import "testing"

func TestMap(t *testing.T) {
	m := New[string, int](2)
	m.Put("a", 1)
	m.Put("b", 2)
	m.Put("b", 3) // the same key: nothing forgotten
	if got := m.Len(); got != 2 {
		t.Fatalf("got %d entries, want 2", got)
	}
	if v, ok := m.Take("b"); !ok || v != 3 {
		t.Fatalf("Take(b) = %v, %v; want 3, true", v, ok)
	}
	if _, ok := m.Take("b"); ok {
		t.Fatalf("Take(b) twice found it again")
	}
	m.Put("b", 4)
	m.Put("c", 5) // full: one of a and b is forgotten
	if got := m.Len(); got != 2 {
		t.Fatalf("got %d entries, want 2 (the bound)", got)
	}
	if v, ok := m.Take("c"); !ok || v != 5 {
		t.Errorf("Take(c) = %v, %v; want 5, true", v, ok)
	}
	m.Delete("a")
	m.Delete("b")
	if got := m.Len(); got != 0 {
		t.Errorf("got %d entries after deleting both, want 0", got)
	}
}
